/// A request for an `HTTP2ClientConnection`. Header names are sent lowercased, as HTTP/2 requires.
public struct HTTP2Request: Sendable {
    public var method: String
    public var path: String
    /// `:authority`; the connection's host (and port unless 443) when nil.
    public var authority: String?
    public var headers: [HeaderField]
    public var body: [UInt8]
    /// Overrides the connection's default request timeout.
    public var timeout: Duration?

    public init(method: String = "POST", path: String, authority: String? = nil,
                headers: [HeaderField] = [], body: [UInt8] = [], timeout: Duration? = nil) {
        self.method = method
        self.path = path
        self.authority = authority
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// A complete answer to an `HTTP2Request`.
public struct HTTP2Response: Sendable {
    public var status: Int
    public var headers: [HeaderField]
    public var body: [UInt8]
    /// The stream the answer came on.
    public var streamID: Int32

    public init(status: Int, headers: [HeaderField], body: [UInt8], streamID: Int32) {
        self.status = status
        self.headers = headers
        self.body = body
        self.streamID = streamID
    }
}
