import Synchronization

/// A handle to one client connection living on its `HTTP2Client`'s I/O thread, where a
/// `ClientConnectionEngine` runs it; commands reach the engine through the loop.
package final class HTTP2ClientConnection: Sendable {
    package let id: Int
    package let host: String
    package let port: Int
    private let loop: EventLoop<ClientCommand>
    private let shared: ClientConnectionShared
    private let requestTimeout: Duration

    init(id: Int, host: String, port: Int, loop: EventLoop<ClientCommand>, shared: ClientConnectionShared, requestTimeout: Duration) {
        self.id = id
        self.host = host
        self.port = port
        self.loop = loop
        self.shared = shared
        self.requestTimeout = requestTimeout
    }

    /// Closing when the last handle goes keeps a forgotten connection from living forever.
    deinit { loop.post(.release(connectionID: id)) }

    /// Readiness, limit changes, GOAWAY and the final close, in order; ends after `.closed`.
    /// One stream per connection: iterate it from a single task (the pool's watcher).
    package var events: AsyncStream<ConnectionEvent> { shared.events }

    package var status: ConnectionStatus { shared.status.withLock { $0 } }

    /// Requests sent on this connection and not yet resolved.
    package var outstandingRequests: Int { shared.outstanding.load(ordering: .relaxed) }

    /// Sends one request; resolves exactly once with the answer or a `RequestFailure` that
    /// says whether the server may have processed it. Cancelling the task resets the stream.
    package func send(_ request: HTTP2Request) async throws(RequestFailure) -> HTTP2Response {
        if Task.isCancelled { throw RequestFailure(.notProcessed, .cancelled) }
        let deadline = MonotonicClock.now() &+ MonotonicClock.nanoseconds(request.timeout ?? requestTimeout)
        let loop = self.loop
        let shared = self.shared
        let id = self.id
        let token = shared.nextToken.add(1, ordering: .relaxed).oldValue
        shared.outstanding.add(1, ordering: .relaxed)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<HTTP2Response, RequestFailure>, Never>) in
                let pending = PendingRequest(token: token, request: request, deadline: deadline, continuation: continuation)
                if !loop.post(.send(connectionID: id, pending)) {
                    continuation.resume(returning: .failure(RequestFailure(.notProcessed, .connectionClosed(.closedLocally))))
                }
            }
        } onCancel: {
            loop.post(.cancel(connectionID: id, token: token))
        }
        shared.outstanding.subtract(1, ordering: .relaxed)
        return try result.get()
    }

    /// Graceful: no new requests, queued ones fail as not processed, in-flight ones finish.
    package func close(graceful: Bool = true) {
        loop.post(.close(connectionID: id, graceful: graceful))
    }
}
