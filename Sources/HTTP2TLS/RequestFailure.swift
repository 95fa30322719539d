/// Why a request did not get an answer, and whether the server may have acted on it.
public struct RequestFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Processing: Sendable, Equatable {
        /// The server certainly did not process it: safe to send again elsewhere.
        case notProcessed
        /// The server may have processed it: sending it again may duplicate it.
        case mayHaveBeenProcessed
    }

    public enum Cause: Sendable, Equatable {
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
    }

    public var processing: Processing
    public var cause: Cause

    public init(_ processing: Processing, _ cause: Cause) {
        self.processing = processing
        self.cause = cause
    }

    public var wasCertainlyNotProcessed: Bool { processing == .notProcessed }

    public var description: String {
        let what: String
        switch cause {
        case .refusedStream: what = "stream refused"
        case .goAway(let goAway): what = "connection going away: \(goAway)"
        case .deadlineExceeded: what = "deadline exceeded"
        case .connectionClosed(let reason): what = "connection closed: \(reason)"
        case .streamReset(let code): what = "stream reset by peer (error \(code))"
        case .cancelled: what = "cancelled"
        case .invalidRequest(let text): what = "invalid request: \(text)"
        }
        return processing == .notProcessed ? "\(what) (not processed)" : "\(what) (may have been processed)"
    }
}

/// Why a connection could not be opened.
public enum ConnectError: Error, Sendable, Equatable, CustomStringConvertible {
    case resolutionFailed(host: String, detail: String)
    case connectFailed(String)
    case tlsHandshakeFailed(String)
    /// The handshake failed because the server's certificate did not verify (expired, for
    /// another host name, from an unknown CA, …).
    case certificateRejected(CertificateRejection)
    /// The server did not select ALPN `h2`.
    case alpnNotNegotiated(selected: String?)
    case timedOut
    /// The `HTTP2Client` has been shut down.
    case clientShutDown

    public var description: String {
        switch self {
        case .resolutionFailed(let host, let detail): return "cannot resolve \(host): \(detail)"
        case .connectFailed(let text): return "TCP connect failed: \(text)"
        case .tlsHandshakeFailed(let text): return "TLS handshake failed: \(text)"
        case .certificateRejected(let rejection): return "TLS handshake failed: \(rejection)"
        case .alpnNotNegotiated(let selected): return "server did not agree to ALPN h2 (selected: \(selected ?? "none"))"
        case .timedOut: return "connect timed out"
        case .clientShutDown: return "HTTP/2 client is shut down"
        }
    }
}
