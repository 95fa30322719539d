import Synchronization

/// How many sockets, TLS sessions and HTTP/2 sessions an `HTTP2Client` or `HTTP2Server`
/// currently holds; all return to zero once it has shut down (leak checks in tests).
package struct LiveObjectCounts: Sendable, Equatable, CustomStringConvertible {
    package var sockets: Int
    package var tlsSessions: Int
    package var http2Sessions: Int
    package var ioThreads: Int

    package init(sockets: Int, tlsSessions: Int, http2Sessions: Int, ioThreads: Int) {
        self.sockets = sockets
        self.tlsSessions = tlsSessions
        self.http2Sessions = http2Sessions
        self.ioThreads = ioThreads
    }

    package static let zero = LiveObjectCounts(sockets: 0, tlsSessions: 0, http2Sessions: 0, ioThreads: 0)

    package var description: String {
        "sockets \(sockets), TLS \(tlsSessions), HTTP/2 \(http2Sessions), threads \(ioThreads)"
    }
}

/// Counters behind `LiveObjectCounts`, shared by the I/O thread (writer) and any reader.
final class LiveObjectCounter: Sendable {
    let sockets = Atomic<Int>(0)
    let tlsSessions = Atomic<Int>(0)
    let http2Sessions = Atomic<Int>(0)
    let ioThreads = Atomic<Int>(0)

    var snapshot: LiveObjectCounts {
        LiveObjectCounts(sockets: sockets.load(ordering: .relaxed),
                         tlsSessions: tlsSessions.load(ordering: .relaxed),
                         http2Sessions: http2Sessions.load(ordering: .relaxed),
                         ioThreads: ioThreads.load(ordering: .relaxed))
    }
}
