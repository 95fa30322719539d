import Synchronization

/// Counters an `HTTP2Server` keeps for tests and benchmarks.
package struct ServerStatistics: Sendable, Equatable {
    package var connectionsAccepted: Int
    package var openConnections: Int
    package var requestsReceived: Int
    /// Connections dropped during the TLS handshake (bad client certificate, no ALPN h2, timeout).
    package var handshakeFailures: Int
    /// The most streams any one connection had open at the same time.
    package var peakConcurrentStreams: Int
}

final class ServerCounters: Sendable {
    let connectionsAccepted = Atomic<Int>(0)
    let openConnections = Atomic<Int>(0)
    let requestsReceived = Atomic<Int>(0)
    let handshakeFailures = Atomic<Int>(0)
    let peakConcurrentStreams = Atomic<Int>(0)

    var snapshot: ServerStatistics {
        ServerStatistics(connectionsAccepted: connectionsAccepted.load(ordering: .relaxed),
                         openConnections: openConnections.load(ordering: .relaxed),
                         requestsReceived: requestsReceived.load(ordering: .relaxed),
                         handshakeFailures: handshakeFailures.load(ordering: .relaxed),
                         peakConcurrentStreams: peakConcurrentStreams.load(ordering: .relaxed))
    }

    /// Only the I/O thread writes, so load-then-store cannot lose a larger value.
    func notePeak(_ open: Int) {
        if open > peakConcurrentStreams.load(ordering: .relaxed) {
            peakConcurrentStreams.store(open, ordering: .relaxed)
        }
    }
}
