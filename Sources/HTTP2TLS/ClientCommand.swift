import Locking
import Synchronization

/// A request waiting for its answer, with the continuation that resolves it exactly once.
struct PendingRequest: Sendable {
    /// Identifies the request for cancellation.
    let token: UInt64
    let request: HTTP2Request
    /// MonotonicClock ns.
    let deadline: UInt64
    let continuation: CheckedContinuation<Result<HTTP2Response, RequestFailure>, Never>

    func resolve(_ result: Result<HTTP2Response, RequestFailure>) {
        continuation.resume(returning: result)
    }
}

/// What a new connection needs on the I/O thread.
struct ConnectionSetup: Sendable {
    let id: Int
    let host: String
    let port: Int
    let addresses: [SocketAddress]
    /// A socket already through the proxy's tunnel to `host` (`addresses` is then the proxy's).
    let tunnel: Int32?
    let configuration: HTTP2ClientConfiguration
    let shared: ClientConnectionShared
    let connected: CheckedContinuation<Result<Void, ConnectError>, Never>
}

enum ClientCommand: Sendable {
    case open(ConnectionSetup)
    case send(connectionID: Int, PendingRequest)
    case cancel(connectionID: Int, token: UInt64)
    case close(connectionID: Int, graceful: Bool)
    /// The last handle is gone: no further command will name this connection.
    case release(connectionID: Int)
}

/// The part of a connection both the I/O thread and callers see: status and events.
final class ClientConnectionShared: Sendable {
    let status: Locked<ConnectionStatus>
    let events: AsyncStream<ConnectionEvent>
    let eventSink: AsyncStream<ConnectionEvent>.Continuation
    /// Requests sent and not yet resolved.
    let outstanding = Atomic<Int>(0)
    let nextToken = Atomic<UInt64>(1)

    init() {
        status = Locked(ConnectionStatus(phase: .connecting, peerMaxConcurrentStreams: 1, goAway: nil))
        (events, eventSink) = AsyncStream.makeStream(of: ConnectionEvent.self, bufferingPolicy: .unbounded)
    }

    func publish(_ event: ConnectionEvent) {
        eventSink.yield(event)
        if case .closed = event { eventSink.finish() }
    }

    func update(_ change: (inout ConnectionStatus) -> Void) {
        status.withLock { change(&$0) }
    }
}
