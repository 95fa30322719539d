/// A request for an `HTTP2ClientConnection`. Header names are sent lowercased, as HTTP/2 requires.
package struct HTTP2Request: Sendable {
    package var method: String
    package var path: String
    /// `:authority`; the connection's host (and port unless 443) when nil.
    package var authority: String?
    package var headers: [HeaderField]
    package var body: [UInt8]
    /// Overrides the connection's default request timeout.
    package var timeout: Duration?

    package init(method: String = "POST", path: String, authority: String? = nil,
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
package struct HTTP2Response: Sendable {
    package var status: Int
    package var headers: ResponseHeaders
    package var body: [UInt8]
    /// The stream the answer came on.
    package var streamID: Int32

    package init(status: Int, headers: ResponseHeaders, body: [UInt8], streamID: Int32) {
        self.status = status
        self.headers = headers
        self.body = body
        self.streamID = streamID
    }
}
