/// One line of the simulator's JSON-lines request log. The `authorization` header is
/// never recorded (it holds the provider token); `providerToken` only says whether one came.
public struct RequestLogEntry: Sendable, Equatable, Codable {
    /// When the simulator handled the request (its clock, UNIX milliseconds).
    public var timeMilliseconds: Int64
    /// When the kernel received it (UNIX milliseconds, to the microsecond), before any
    /// wait for the simulator's thread; nil when the socket gave no time. Rates and
    /// latencies are measured from this.
    public var receivedMilliseconds: Double?
    public var connection: Int
    public var stream: Int32
    public var method: String
    public var path: String
    /// The device token from `:path`, as sent.
    public var token: String?
    /// Request headers except `authorization`.
    public var headers: [String: String]
    public var providerToken: Bool
    public var bodyBytes: Int
    /// `answered`, `refused` (REFUSED_STREAM), `dropped` (connection closed, no answer),
    /// `ignored` (after this connection's GOAWAY) or `goaway` (answered by a GOAWAY that
    /// processed no stream).
    public var outcome: String
    public var status: Int?
    public var reason: String?
}
