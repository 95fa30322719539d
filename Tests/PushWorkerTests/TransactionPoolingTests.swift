import APNsSimulator
import EmbeddedPostgres
import Foundation
import Locking
import PGPushTestSupport
import Postgres
import PushQueue
import PushWorker
import Testing

/// pgpush behind PgBouncer in transaction pooling mode, where each transaction may run on
/// another server connection: what used to break there. Session advisory locks were taken
/// on one server connection and released on another, or never (a migration lock and the
/// prune leader's lock left held; two migrations at once, one failing with a duplicate
/// key), and LISTEN was made on a server connection that then served other clients, so
/// wake-ups were silently lost.
@Suite("Through PgBouncer in transaction pooling mode",
       .enabled(if: EmbeddedPgBouncer.isInstalled || ProcessInfo.processInfo.environment["CI"] == "true",
                "skipped: pgbouncer is not installed (deploy/local/install-dependencies.sh installs it)"))
struct TransactionPoolingTests {

    /// Advisory locks held in `database` right now, read directly from the cluster.
    static func advisoryLocks(_ direct: PostgresConnection) throws -> Int {
        try direct.query("""
            SELECT count(*) FROM pg_locks
             WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """).int(0, 0) ?? -1
    }

    @Test func concurrentMigrationsTakeTurnsAndLeaveNoLockBehind() async throws {
        let (pooled, direct) = try TestDatabase.emptyBehindPooler()
        let migrations = try Migration.load(directory: TestDatabase.sqlDirectory)
        let failures = Locked<[String]>([])
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    do {
                        try MigrationRunner(migrations: migrations).migrate(PostgresConnection(conninfo: pooled))
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let database = try PostgresConnection(conninfo: direct)
        #expect(try database.query("SELECT count(*) FROM pgpush.schema_migrations").int(0, 0) == migrations.count)
        #expect(try Self.advisoryLocks(database) == 0, "a migration lock outlived its migration")
    }

    @Test func pruneLeadersLeaveNoLockBehind() async throws {
        let (pooled, direct) = try TestDatabase.migratedBehindPooler()
        let database = try PostgresConnection(conninfo: direct)
        // Three partitions of 1,000 finished rows, for the leaders to drop.
        try TestDatabase.cutHistory(database, span: 1000, ahead: 4)
        try database.query("""
            INSERT INTO pgpush.notifications (device_token, payload, status, finished_at)
            SELECT lpad(to_hex(n), 64, '0'), '{"aps":{}}', 'delivered', now() - interval '2 days'
              FROM generate_series(1, 3000) AS n
            """)
        // Several would-be leaders at once, each pruning step by step, the way workers
        // share the pooler's server connections.
        let failures = Locked<[String]>([])
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    do {
                        let queue = NotificationQueue(connection: try PostgresConnection(conninfo: pooled), workerID: "pruner-\(worker)")
                        for _ in 0..<5 { _ = try queue.prune(olderThan: .seconds(86_400), batchSize: 100, onlyIfLeader: true) }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(try Self.advisoryLocks(database) == 0, "the prune leader's lock outlived its prune")
        #expect(try database.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 0)
    }

    @Test func withoutADirectListenConnectionTheWorkerSaysItPolls() async throws {
        let harness = try SimulatorHarness(faults: FaultPlan())
        defer { harness.stop() }
        let (pooled, direct) = try TestDatabase.migratedBehindPooler()
        let lines = Locked<[String]>([])
        var configuration = WorkerConfiguration(databaseURL: pooled, apps: [harness.app], workerID: "pooled-worker")
        configuration.pollInterval = .milliseconds(200)
        let worker = try Worker(configuration: configuration, senders: try SenderFactory.makeSenders(for: [harness.app]),
                                log: Log(sink: { line in lines.withLock { $0.append(line) } }))
        let running = Task { try await worker.run() }
        let warned = try await eventually(timeout: .seconds(180)) {
            lines.withLock { $0.contains { $0.contains("wakeups_not_delivered") && $0.contains("PGPUSH_LISTEN_DATABASE_URL") } }
        }
        // Polling still delivers.
        let database = try PostgresConnection(conninfo: direct)
        try database.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{\"alert\":\"x\"}}')",
                           [WorkerEndToEndTests.token(1)])
        try await WorkerEndToEndTests.waitUntilFinished(database)
        worker.stop()
        try await running.value
        #expect(warned, "no wakeups_not_delivered warning; log:\n\(lines.withLock { $0 }.suffix(10).joined())")
        #expect(try Self.listeners(database) == 0, "LISTEN was made through the pooler")
        #expect(try database.query("SELECT status FROM pgpush.notifications").string(0, 0) == "delivered")
    }

    @Test func aDirectListenConnectionWakesTheWorkerAtOnce() async throws {
        let harness = try SimulatorHarness(faults: FaultPlan())
        defer { harness.stop() }
        let (pooled, direct) = try TestDatabase.migratedBehindPooler()
        var configuration = WorkerConfiguration(databaseURL: pooled, apps: [harness.app], workerID: "woken-worker")
        configuration.listenDatabaseURL = direct
        // Polling alone would take ten minutes: only a wake-up delivers the row within the wait below.
        configuration.pollInterval = .seconds(600)
        let worker = try Worker(configuration: configuration, senders: try SenderFactory.makeSenders(for: [harness.app]),
                                log: Log(sink: { _ in }))
        let running = Task { try await worker.run() }
        let database = try PostgresConnection(conninfo: direct)
        let listening = try await eventually(timeout: .seconds(180)) { try Self.listeners(database) == 1 }
        #expect(listening, "the worker did not LISTEN on its direct connection")
        try database.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{\"alert\":\"x\"}}')",
                           [WorkerEndToEndTests.token(2)])
        try await WorkerEndToEndTests.waitUntilFinished(database)
        worker.stop()
        try await running.value
        #expect(try database.query("SELECT status FROM pgpush.notifications").string(0, 0) == "delivered")
    }

    /// Backends of this database listening for new rows.
    static func listeners(_ direct: PostgresConnection) throws -> Int {
        try direct.query("""
            SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND query LIKE 'LISTEN%pgpush_queued%'
            """).int(0, 0) ?? -1
    }

    /// A statement prepared on one server session, and the next transaction on another: the
    /// statement is sent again unnamed and answers; the connection prepares nothing more.
    @Test func preparedStatementsEndWhenThePoolerSwitchesSessions() throws {
        let (pooled, _) = try TestDatabase.emptyBehindPooler()
        let connection = try PostgresConnection(conninfo: pooled)
        connection.preparesStatements = true
        // A text of its own: no other connection of the pooler has prepared it anywhere.
        let sql = "SELECT $1::int * 2 /* \(UUID().uuidString) */"
        #expect(try connection.query(sql, [21]).int(0, 0) == 42)
        for attempt in 1...20 where connection.preparesStatements {
            // Other clients hold server sessions inside transactions (the most recently
            // released first: the one this connection used), so its next runs elsewhere.
            let holders = try (0..<3).map { _ in try PostgresConnection(conninfo: pooled) }
            for holder in holders { try holder.execute(script: "BEGIN; SELECT 1") }
            #expect(try connection.query(sql, [attempt]).int(0, 0) == attempt * 2)
            for holder in holders { try holder.execute(script: "COMMIT") }
        }
        #expect(!connection.preparesStatements)
        #expect(try connection.query(sql, [50]).int(0, 0) == 100)
    }
}
