import CShims
import Synchronization
import Foundation
import Postgres

/// Listens for `pgpush_queued` on a connection and thread of its own, and
/// rings the doorbell of the app each notification names.
///
/// LISTEN needs a connection that waits in poll(); sharing one with queries
/// would delay either. Reconnects with backoff when PostgreSQL goes away, and
/// then rings every app, since rows may have arrived while it was deaf.
final class QueueListener: Sendable {
    static let channel = "pgpush_queued"

    private let wakeDescriptor: Int32
    private let stopped = Atomic<Bool>(false)
    private let finished = Doorbell()
    private let started = Atomic<Bool>(false)

    init() throws {
        let descriptor = cshims_eventfd(0, 1)
        guard descriptor >= 0 else { throw ConfigurationError("cannot create an eventfd: errno \(errno)") }
        wakeDescriptor = descriptor
    }

    deinit { close(wakeDescriptor) }

    func start(conninfo: String, log: Log, onQueued: @escaping @Sendable (String) -> Void, onReconnect: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            run(conninfo: conninfo, log: log, onQueued: onQueued, onReconnect: onReconnect)
            finished.ring()
        }
        thread.name = "pgpush-listen"
        started.store(true, ordering: .sequentiallyConsistent)
        thread.start()
    }

    func stop() async {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, 8)
        if started.load(ordering: .sequentiallyConsistent) { await finished.wait(timeout: .seconds(5)) }
    }

    private func run(conninfo: String, log: Log, onQueued: @Sendable (String) -> Void, onReconnect: @Sendable () -> Void) {
        var connection: PostgresConnection?
        var backoff = Duration.milliseconds(100)
        while !stopped.load(ordering: .sequentiallyConsistent) {
            do {
                if connection == nil {
                    let fresh = try PostgresConnection(conninfo: conninfo)
                    try fresh.listen(Self.channel)
                    connection = fresh
                    backoff = .milliseconds(100)
                    onReconnect()
                }
                guard let connection else { continue }
                for notification in try connection.waitForNotifications(timeout: .seconds(30), wakeDescriptor: wakeDescriptor) {
                    onQueued(notification.payload)
                }
            } catch {
                if connection != nil { log.warning("listen_connection_lost", ["error": error]) }
                connection = nil
                waitInterruptibly(backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    /// Sleeps unless `stop()` writes the eventfd first.
    private func waitInterruptibly(_ duration: Duration) {
        var descriptor = pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        _ = poll(&descriptor, 1, milliseconds)
    }
}

