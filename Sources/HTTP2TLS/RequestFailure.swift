import PGPushCore

/// Why a request did not get an answer, and whether the server may have acted on it
/// (`Processing`, the core's one word for it).
package struct RequestFailure: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Cause: Sendable, Equatable {
        /// RST_STREAM REFUSED_STREAM (RFC 9113 §8.7).
        case refusedStream
        /// The stream id was above the GOAWAY's last_stream_id, or the request was still
        /// queued when GOAWAY arrived.
        case goAway(GoAway)
        /// No complete answer before the request's deadline.
        case deadlineExceeded
        /// The connection ended (or was already closed) before an answer.
        case connectionClosed(CloseReason)
        /// The peer reset the stream with this HTTP/2 error code.
        case streamReset(errorCode: UInt32)
        /// The calling task was cancelled (RST_STREAM CANCEL if it had been sent).
        case cancelled
        /// The request could not be encoded (e.g. header rejected by nghttp2).
        case invalidRequest(String)
        /// The answer went past a bound on what one response may hold, so this side gave up
        /// on it (a body: the stream was reset; a header list: the connection was ended).
        /// The server had the request, so it may have processed it.
        case responseTooLarge(ResponseBound)
    }

    package var processing: Processing
    package var cause: Cause

    package init(_ processing: Processing, _ cause: Cause) {
        self.processing = processing
        self.cause = cause
    }

    package var wasCertainlyNotProcessed: Bool { processing == .notProcessed }

    package var description: String {
        let what: String
        switch cause {
        case .refusedStream: what = "stream refused"
        case .goAway(let goAway): what = "connection going away: \(goAway)"
        case .deadlineExceeded: what = "deadline exceeded"
        case .connectionClosed(let reason): what = "connection closed: \(reason)"
        case .streamReset(let code): what = "stream reset by peer (error \(code))"
        case .cancelled: what = "cancelled"
        case .invalidRequest(let text): what = "invalid request: \(text)"
        case .responseTooLarge(let bound): what = "response too large: \(bound)"
        }
        return processing == .notProcessed ? "\(what) (not processed)" : "\(what) (may have been processed)"
    }
}

/// A bound on what one answer may take in memory, whatever the peer sends: without one a
/// server (or whatever stands in its place) could make the client buffer an endless body,
/// or decode a small HPACK block into gigabytes of header fields.
package enum ResponseBound: Sendable, Equatable, CustomStringConvertible {
    /// The body went past this many bytes (`HTTP2ClientConfiguration.maxResponseBodySize`).
    case body(limit: Int)
    /// The decoded header fields went past this many bytes, each counted as name + value
    /// + 32 as for SETTINGS_MAX_HEADER_LIST_SIZE (`HTTP2ClientConfiguration.maxResponseHeaderListSize`).
    case headerList(limit: Int)

    package var description: String {
        switch self {
        case .body(let limit): return "body over \(limit) bytes"
        case .headerList(let limit): return "header list over \(limit) bytes"
        }
    }
}

/// Why a connection could not be opened.
package enum ConnectError: Error, Sendable, Equatable, CustomStringConvertible {
    case resolutionFailed(host: String, detail: String)
    /// Every address the host resolved to was refused (`permitsAddress`); nothing was connected to.
    case addressNotPermitted(host: String, addresses: String)
    case connectFailed(String)
    case tlsHandshakeFailed(String)
    /// The handshake failed because the server's certificate did not verify (expired, for
    /// another host name, from an unknown CA, …).
    case certificateRejected(CertificateRejection)
    /// The server did not select ALPN `h2`.
    case alpnNotNegotiated(selected: String?)
    case timedOut
    /// The HTTP proxy answered `CONNECT` with a status other than 2xx (403: not allowed
    /// there, 407, or 401 from some proxies: credentials missing or refused).
    case proxyRefused(proxy: String, status: Int, reason: String)
    /// The proxy could not be reached, or its answer was no HTTP answer.
    case proxyFailed(proxy: String, detail: String)
    /// The `HTTP2Client` has been shut down.
    case clientShutDown

    package var description: String {
        switch self {
        case .resolutionFailed(let host, let detail): return "cannot resolve \(host): \(detail)"
        case .addressNotPermitted(let host, let addresses):
            return "\(host) resolves only to addresses not permitted (\(addresses)); no connection attempted"
        case .connectFailed(let text): return "TCP connect failed: \(text)"
        case .tlsHandshakeFailed(let text): return "TLS handshake failed: \(text)"
        case .certificateRejected(let rejection): return "TLS handshake failed: \(rejection)"
        case .alpnNotNegotiated(let selected): return "server did not agree to ALPN h2 (selected: \(selected ?? "none"))"
        case .timedOut: return "connect timed out"
        case .proxyRefused(let proxy, let status, let reason):
            return "the proxy \(proxy) refused the tunnel: \(status) \(reason)"
                + (status == 401 || status == 407 ? " (credentials missing or refused: they go in the proxy URL)" : "")
        case .proxyFailed(let proxy, let detail): return "the proxy \(proxy) failed: \(detail)"
        case .clientShutDown: return "HTTP/2 client is shut down"
        }
    }
}
