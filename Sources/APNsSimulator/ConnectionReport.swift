/// One connection in a `SimulatorReport`.
public struct ConnectionReport: Sendable, Equatable, Codable {
    public var id: Int
    public var requests: Int
    /// The most requests this connection received within any one second.
    public var maxRequestsInOneSecond: Int
    /// Whether a valid JWT (or client certificate) was accepted on it.
    public var authenticated: Bool
    public var open: Bool

    public init(id: Int, requests: Int, maxRequestsInOneSecond: Int, authenticated: Bool, open: Bool) {
        self.id = id
        self.requests = requests
        self.maxRequestsInOneSecond = maxRequestsInOneSecond
        self.authenticated = authenticated
        self.open = open
    }
}
