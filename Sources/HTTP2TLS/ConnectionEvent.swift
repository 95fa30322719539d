/// Why a client connection ended.
package enum CloseReason: Sendable, Equatable, CustomStringConvertible {
    /// `close()` was called, or the owning `HTTP2Client` shut down.
    case closedLocally
    /// The peer sent GOAWAY and every stream it still accepted has finished.
    case goAway(GoAway)
    /// The peer closed the TCP/TLS connection.
    case peerClosed
    /// No frame arrived within the ping timeout after a PING.
    case pingTimeout
    /// HTTP/2 framing error (from nghttp2) or a stream-id space exhausted.
    case protocolError(String)
    /// A socket or TLS error after the handshake.
    case ioError(String)
    /// An answer's header list went past its bound: decoding more of it would cost memory
    /// and CPU for nothing, and HPACK state cannot be kept without decoding it.
    case responseTooLarge(ResponseBound)
    /// This many requests in a row passed their deadlines in flight with no answer on the
    /// connection since they went out, though the peer may still answer PINGs: it is
    /// replaced rather than kept spending every request's attempt.
    case unresponsive(deadlinesInARow: Int)

    package var description: String {
        switch self {
        case .closedLocally: return "closed locally"
        case .goAway(let goAway): return "closed after \(goAway)"
        case .peerClosed: return "peer closed the connection"
        case .pingTimeout: return "no answer to PING"
        case .protocolError(let text): return "HTTP/2 protocol error: \(text)"
        case .ioError(let text): return "I/O error: \(text)"
        case .responseTooLarge(let bound): return "response too large: \(bound)"
        case .unresponsive(let count): return "\(count) requests in a row got no answer before their deadlines"
        }
    }
}

/// Changes a connection pool reacts to, in the order they happen.
package enum ConnectionEvent: Sendable, Equatable {
    /// The peer's first SETTINGS arrived: the connection may fan out up to this many streams.
    case ready(maxConcurrentStreams: Int)
    /// A later SETTINGS changed the peer's limit.
    case maxConcurrentStreamsChanged(Int)
    /// The connection takes no new requests; streams up to `lastStreamID` may still finish.
    case goAwayReceived(GoAway)
    /// Final event; every request on the connection has been resolved.
    case closed(CloseReason)
}

/// A snapshot of a client connection's state.
package struct ConnectionStatus: Sendable, Equatable {
    package enum Phase: Sendable, Equatable {
        case connecting
        /// Handshake done; the peer's SETTINGS may still be outstanding.
        case open
        case ready
        /// GOAWAY received or graceful close requested: no new requests.
        case draining
        case closed(CloseReason)
    }

    package var phase: Phase
    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS (1 until it is known).
    package var peerMaxConcurrentStreams: Int
    /// How many streams the connection takes at once now, by the transport's one rule
    /// (`ClientConnectionStateMachine.streamLimit`): the peer's limit under the local cap,
    /// and 1 until the first answer where the configuration asks for it. Updated before
    /// the request that changed it resolves, so a caller woken by that answer sees it.
    package var streamLimit = 1
    package var goAway: GoAway?

    /// True while `send` can be expected to go out on this connection.
    package var acceptsRequests: Bool {
        switch phase {
        case .connecting, .open, .ready: return true
        case .draining, .closed: return false
        }
    }
}
