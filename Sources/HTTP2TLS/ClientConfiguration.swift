/// Settings for one client connection.
package struct HTTP2ClientConfiguration: Sendable {
    /// Trust (system store + optional extra CA) and optional client certificate.
    package var tls: ClientTLSContext
    /// Default per-request deadline, counted from `send`.
    package var requestTimeout: Duration = .seconds(10)
    /// TCP connect plus TLS handshake.
    package var connectTimeout: Duration = .seconds(10)
    /// A PING goes out after this long without any frame from the server ...
    package var pingInterval: Duration = .seconds(60)
    /// ... and the connection is declared dead if nothing arrives this long after it.
    package var pingTimeout: Duration = .seconds(10)
    /// Our own cap on concurrent streams; the server's SETTINGS may lower it further.
    package var maxConcurrentStreams: Int = 1000
    /// Keep one request in flight until the first answer (APNs token auth: the server allows
    /// one stream until a request with a valid JWT has been seen).
    package var singleStreamUntilFirstResponse: Bool = false
    /// The most body bytes one response may have; past it the stream is reset and the
    /// request fails with `.responseTooLarge(.body)`. APNs answers with at most a small
    /// JSON error; without a bound a peer could send an endless body, since flow-control
    /// windows are refilled as it is read.
    package var maxResponseBodySize: Int = 64 * 1024
    /// The most decoded header bytes one response may have (name + value + 32 per field,
    /// trailers included); advertised as SETTINGS_MAX_HEADER_LIST_SIZE. Past it the
    /// connection ends (`CloseReason.responseTooLarge`): a few KiB of HPACK can decode
    /// into hundreds of MiB, and stopping mid-block leaves no HPACK state to go on with.
    package var maxResponseHeaderListSize: Int = 16 * 1024
    /// After this many requests in a row passed their deadlines in flight with no answer
    /// on the connection since they went out, the connection closes as `.unresponsive`
    /// (requests still queued fail as not processed, to be sent elsewhere). PINGs do not
    /// count as answers: a peer can answer them and nothing else. Requests that expire
    /// while others are answered do not count: that server is slow, not gone. 0: never.
    package var unresponsiveAfterDeadlines: Int = 3
    /// At most this many requests written in any one-second window (nil: no cap). Enforced on
    /// the I/O thread at the moment of submission, so a stalled loop delays requests but never
    /// bunches them.
    package var maxRequestsPerSecond: Int?
    /// A cap shared with the client's other connections, held the same way (a share of
    /// `rate_per_app`); nil: none.
    package var sharedWindow: SharedSubmitWindow?
    /// Called on the I/O thread with each answered request, before its caller resumes. For
    /// the rare answer that must change what the next requests do at once: a caller's task
    /// may resume many milliseconds later on a busy machine, and every request written
    /// meanwhile would meet the same answer.
    package var answerObserver: (@Sendable (HTTP2Request, HTTP2Response) -> Void)?

    /// Which of a host's resolved addresses a connection may go to, each given as 4 bytes
    /// (IPv4) or 16 (IPv6); nil: any. Only the addresses it permits are connected to, so the
    /// address checked is the address used (a Web Push endpoint names a host that must not
    /// lead into the operator's own network). None permitted: `addressNotPermitted`, and no
    /// connection is attempted.
    package var permitsAddress: (@Sendable ([UInt8]) -> Bool)?
    /// Connections go through this proxy's `CONNECT` tunnel, unless its `NO_PROXY` names
    /// the host; nil: straight to the host. With `permitsAddress` the host is still resolved
    /// here and refused when no address of it is permitted, before the proxy is asked.
    package var proxy: HTTPProxy?

    package init(tls: ClientTLSContext) {
        self.tls = tls
    }
}
