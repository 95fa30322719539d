import CShims
import Synchronization
import Foundation
import Postgres
import PushQueue

/// Listens for `pgpush_queued` on a connection and thread of its own, and
/// rings the doorbell of the app each notification names.
///
/// LISTEN needs a connection that waits in poll(); sharing one with queries
/// would delay either. Reconnects with backoff when PostgreSQL goes away, and
/// then rings every app, since rows may have arrived while it was deaf.
///
/// It stops listening while the worker does not need wake-ups (`setListening`): when every
/// app's claim loop polls because its rows keep coming (`ClaimSchedule.polling`).
/// A NOTIFY then costs PostgreSQL a transaction in the listening session for nothing, and the
/// worker a thread wake-up (BENCHMARKS.md, 0.5.0). Listening again, it rings every app, as
/// after a reconnect: a row committed before LISTEN took effect sent its NOTIFY to no one, and
/// the claim that follows sees it.
///
/// Each connection is first checked: a notification sent through the worker's own
/// database connection string must arrive. Through a transaction pooler it does not
/// (`ConnectionPooling`), and listening there would only scatter notifications over
/// other clients; the listener then says so once and stops, and the worker finds new
/// rows by polling.
final class QueueListener: Sendable {
    static let channel = "pgpush_queued"

    private let wakeDescriptor: Int32
    /// Written when `wanted` changes (apart from `wakeDescriptor`, which means stop).
    private let changeDescriptor: Int32
    private let stopped = Atomic<Bool>(false)
    private let finished = Doorbell()
    private let started = Atomic<Bool>(false)
    /// Whether the worker wants wake-ups; the listener thread follows it.
    private let wanted = Atomic<Bool>(true)

    init() throws {
        let descriptor = cshims_eventfd(0, 1)
        guard descriptor >= 0 else { throw ConfigurationError("cannot create an eventfd: errno \(errno)") }
        wakeDescriptor = descriptor
        let change = cshims_eventfd(0, 1)
        guard change >= 0 else {
            close(descriptor)
            throw ConfigurationError("cannot create an eventfd: errno \(errno)")
        }
        changeDescriptor = change
    }

    deinit {
        close(wakeDescriptor)
        close(changeDescriptor)
    }

    /// Where to listen and how the check's notification is sent.
    struct Source: Sendable {
        /// The connection string LISTEN uses.
        let listenConninfo: String
        /// The setting it came from, for the log.
        let setting: String
        /// The worker's own database connection string: the check's NOTIFY goes through it.
        let notifyConninfo: String
        /// How often the worker polls without wake-ups, for the log.
        let pollInterval: Duration
    }

    /// How long a check's notification may take: far longer than any real session needs.
    static let checkTimeout: Duration = .seconds(10)

    func start(_ source: Source, log: Log, onQueued: @escaping @Sendable (String) -> Void, onReconnect: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            // Set from the thread itself: Foundation's `Thread.name` does not reach the kernel here.
            _ = cshims_set_thread_name("pgpush-listen")
            run(source, log: log, onQueued: onQueued, onReconnect: onReconnect)
            finished.ring()
        }
        started.store(true, ordering: .sequentiallyConsistent)
        thread.start()
    }

    /// Listen (true) or not; the listener thread follows within one round trip.
    func setListening(_ listening: Bool) {
        guard wanted.exchange(listening, ordering: .sequentiallyConsistent) != listening else { return }
        var one: UInt64 = 1
        _ = write(changeDescriptor, &one, 8)
    }

    func stop() async {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, 8)
        if started.load(ordering: .sequentiallyConsistent) { await finished.wait(timeout: .seconds(5)) }
    }

    private func run(_ source: Source, log: Log, onQueued: @Sendable (String) -> Void, onReconnect: @Sendable () -> Void) {
        var connection: PostgresConnection?
        var listening = false
        var backoff = Duration.milliseconds(100)
        while !stopped.load(ordering: .sequentiallyConsistent) {
            do {
                if connection == nil {
                    let fresh = try PostgresConnection(conninfo: source.listenConninfo)
                    guard try ConnectionPooling.deliversNotifications(to: fresh, from: source.notifyConninfo,
                                                                      timeout: Self.checkTimeout, wakeDescriptor: wakeDescriptor) else {
                        if !stopped.load(ordering: .sequentiallyConsistent) { warnNoWakeUps(source, log: log) }
                        return
                    }
                    try fresh.listen(Self.channel)
                    connection = fresh
                    listening = true
                    backoff = .milliseconds(100)
                    onReconnect()
                }
                guard let connection else { continue }
                var count: UInt64 = 0
                _ = read(changeDescriptor, &count, 8)  // non-blocking: takes a change's wake-up, if any
                let wantsListening = wanted.load(ordering: .sequentiallyConsistent)
                if wantsListening != listening {
                    if wantsListening { try connection.listen(Self.channel) } else { try connection.unlisten(Self.channel) }
                    listening = wantsListening
                    if listening { onReconnect() }
                }
                for notification in try connection.waitForNotifications(timeout: .seconds(30), wakeDescriptor: wakeDescriptor,
                                                                         alsoWakeOn: changeDescriptor) {
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

    private func warnNoWakeUps(_ source: Source, log: Log) {
        let seconds = Double(source.pollInterval.components.seconds)
            + Double(source.pollInterval.components.attoseconds) / 1e18
        var advice = "set PGPUSH_LISTEN_DATABASE_URL to a direct (session) connection to the same database"
        if source.setting == "PGPUSH_LISTEN_DATABASE_URL" { advice = "point it at PostgreSQL itself, not at a pooler" }
        log.warning("wakeups_not_delivered", [
            "setting": source.setting,
            "problem": "a NOTIFY did not reach a LISTEN made through \(source.setting) within "
                + "\(Self.checkTimeout.components.seconds) s: a transaction pooler (PgBouncer with pool_mode=transaction) "
                + "stands in between. New rows are found by polling every \(seconds) s instead; for immediate wake-ups, \(advice)",
        ])
    }

    /// Sleeps unless `stop()` writes the eventfd first.
    private func waitInterruptibly(_ duration: Duration) {
        var descriptor = pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        _ = poll(&descriptor, 1, milliseconds)
    }
}

