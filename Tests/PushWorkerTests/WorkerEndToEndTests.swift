import APNsClient
import APNsSimulator
import Foundation
import Locking
import PGPushCore
import PGPushTestSupport
import Postgres
import PushCrypto
import PushWorker
import Testing

/// The worker against a real PostgreSQL and the APNs simulator over TLS + HTTP/2.
@Suite struct WorkerEndToEndTests {
    static let bundleID = "com.example.app"

    static func token(_ number: Int) -> String { String(format: "%064x", number) }

    static func fastRetries() -> RetryConfiguration {
        var retry = RetryConfiguration.default
        retry.serverErrorDelay = .milliseconds(10) ... .milliseconds(50)
        retry.tooManyRequestsBaseDelay = .milliseconds(20)
        retry.tooManyRequestsMaximumDelay = .milliseconds(100)
        return retry
    }

    /// Polls the table until no row is unfinished; the worker has no "done" event of its own.
    static func waitUntilFinished(_ connection: PostgresConnection, timeout: Duration = stateWaitLimit) async throws {
        let finished = try await eventually(timeout: timeout, every: .milliseconds(50)) {
            try connection.query("SELECT count(*) FROM pgpush.notifications WHERE status IN ('queued', 'sending')").int(0, 0) == 0
        }
        if !finished { Issue.record("rows still unfinished after \(timeout)") }
    }

    static func counts(_ connection: PostgresConnection, _ sql: String) throws -> [String: Int] {
        let result = try connection.query(sql)
        var counts: [String: Int] = [:]
        for row in 0..<result.rowCount { counts[result.string(row, 0) ?? "null"] = result.int(row, 1) }
        return counts
    }

    @Test func deliversRetriesAndRecordsEveryOutcome() async throws {
        let unregistered = Self.token(900_001), flaky = Self.token(900_002), hammered = Self.token(900_003)
        var faults = FaultPlan()
        faults.unregisteredTokens = [unregistered]
        faults.scripts = [flaky: [try ScriptedAnswer(parsing: "503"), try ScriptedAnswer(parsing: "503")],
                          hammered: [try ScriptedAnswer(parsing: "TooManyRequests")]]
        let harness = try SimulatorHarness(faults: faults)
        defer { harness.stop() }

        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        let goodTokens = (1...300).map(Self.token)
        try database.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{\"aps\":{\"alert\":\"hello\"}}')", [goodTokens])
        for token in [unregistered, flaky, hammered] {
            try database.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{\"alert\":\"x\"}}')", [token])
        }
        // Valid for SQL, but a background push may not carry an alert: only the worker can tell.
        try database.query("""
            SELECT pgpush.enqueue(device_token => $1, push_type => 'background',
                                  payload => '{"aps":{"content-available":1,"alert":"no"}}')
            """, [Self.token(900_004)])

        let worker = try harness.worker(conninfo: conninfo, id: "test-worker", log: Log(minimum: .warning)) {
            $0.apps[0].retry = Self.fastRetries()
            $0.pollInterval = .milliseconds(50)
        }
        let running = Task { try await worker.run() }
        try await Self.waitUntilFinished(database)

        let registered = try database.query("SELECT id, host, pid FROM pgpush.workers")
        #expect(registered.string(0, 0) == "test-worker")
        worker.stop()
        try await running.value

        #expect(try Self.counts(database, "SELECT status, count(*) FROM pgpush.notifications GROUP BY 1")
                == ["delivered": 302, "failed": 2])
        let rows = try database.query("""
            SELECT device_token, status, attempts, last_status, last_reason FROM pgpush.notifications
             WHERE device_token = ANY($1) ORDER BY device_token
            """, [[unregistered, flaky, hammered, Self.token(900_004)]])
        #expect(rows.rowCount == 4)
        #expect(rows.string(0, 1) == "failed" && rows.int(0, 3) == 410 && rows.string(0, 4) == "Unregistered")
        #expect(rows.string(1, 1) == "delivered" && rows.int(1, 2) == 3 && rows.int(1, 3) == 200)
        #expect(rows.string(2, 1) == "delivered" && rows.int(2, 2) == 2)
        #expect(rows.string(3, 1) == "failed" && rows.int(3, 2) == 1 && rows.int(3, 3) == nil)
        #expect(rows.string(3, 4) == "BadBackgroundPayload")

        #expect(try Self.counts(database, "SELECT coalesce(status::text, 'none') || ' ' || reason, count(*) FROM pgpush.delivery_errors GROUP BY 1")
                == ["503 ServiceUnavailable": 2, "429 TooManyRequests": 1, "410 Unregistered": 1, "none BadBackgroundPayload": 1])
        let invalid = try database.query("SELECT device_token, reason, apple_timestamp IS NOT NULL FROM pgpush.invalid_tokens")
        #expect(invalid.rowCount == 1)
        #expect(invalid.string(0, 0) == unregistered)
        #expect(invalid.bool(0, 2) == true)
        #expect(try database.query("SELECT count(*) FROM pgpush.workers").int(0, 0) == 0)
        #expect(try database.query("SELECT healthy FROM pgpush.app_health WHERE app = 'default'").bool(0, 0) == true)

        let report = harness.simulator.report()
        #expect(report.totalRequests == 300 + 1 + 3 + 2)
        #expect(report.duplicateAcceptedAPNsIDs == 0)
    }

    /// A worker that polls so rarely (600 s) that only a NOTIFY can explain a quick delivery.
    static func wakeUpWorker(_ harness: SimulatorHarness, conninfo: String, id: String) throws -> Worker {
        var configuration = WorkerConfiguration(databaseURL: conninfo, apps: [harness.app], workerID: id)
        // Through a transaction pooler LISTEN needs a session connection of its own.
        if TestDatabase.throughPooler { configuration.listenDatabaseURL = try TestDatabase.session(conninfo) }
        configuration.pollInterval = .seconds(600)
        return try Worker(configuration: configuration, senders: try SenderFactory.makeSenders(for: [harness.app]),
                          log: Log(minimum: .warning))
    }

    @Test func newRowsAreSentWithoutPolling() async throws {
        let harness = try SimulatorHarness(faults: FaultPlan())
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        let worker = try Self.wakeUpWorker(harness, conninfo: conninfo, id: "notify-worker")
        let running = Task { try await worker.run() }
        defer { worker.stop() }
        // Wait until the worker is registered (its listener starts right after).
        #expect(try await eventually { try database.query("SELECT count(*) FROM pgpush.workers").int(0, 0) == 1 })
        for round in 1...3 {
            try await Task.sleep(for: .milliseconds(200))   // let the claim loop go idle
            try database.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{\"alert\":\"hi\"}}')", [Self.token(round)])
            // Far below the 600 s poll, with room for ThreadSanitizer beside the other suites
            // (30 s once ran out there).
            try await Self.waitUntilFinished(database)
        }
        #expect(try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'delivered'").int(0, 0) == 3)
        worker.stop()
        try await running.value
    }

    /// Whether the worker's listening session's last statement, in this test's database, was
    /// `statement` (LISTEN or UNLISTEN).
    static func listener(of monitor: PostgresConnection, said statement: String) throws -> Bool {
        try monitor.query("SELECT count(*) FROM pg_stat_activity WHERE query = $1 AND datname = current_database()",
                          [statement]).int(0, 0) == 1
    }

    /// While rows come faster than the claim gap the worker stops listening (every NOTIFY
    /// would cost PostgreSQL a transaction for nothing); when they stop, it listens again, and
    /// a row inserted into the quiet queue is sent at once, not at the 600 s poll.
    @Test func aStreamOfRowsNeedsNoWakeUpsAndTheQuietAfterItDoes() async throws {
        let harness = try SimulatorHarness(faults: FaultPlan())
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        let worker = try Self.wakeUpWorker(harness, conninfo: conninfo, id: "stream-worker")
        let running = Task { try await worker.run() }
        defer { worker.stop() }
        let monitor = try PostgresConnection(conninfo: try TestDatabase.session(conninfo))
        let listenerSaid = { try Self.listener(of: monitor, said: $0) }
        #expect(try await eventually { try listenerSaid("LISTEN \"pgpush_queued\"") })

        // One row per statement, as fast as this connection goes, until the listener stops.
        let clock = ContinuousClock(), giveUp = clock.now + .seconds(120)
        var inserted = 0, unlistened = false
        while !unlistened && clock.now < giveUp {
            try database.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{\"alert\":\"hi\"}}')",
                               [Self.token(inserted + 1)])
            inserted += 1
            if inserted % 20 == 0 { unlistened = try listenerSaid("UNLISTEN \"pgpush_queued\"") }
        }
        #expect(unlistened, "still listening after \(inserted) rows")
        try await Self.waitUntilFinished(database)
        #expect(try await eventually(timeout: stateWaitLimit) { try listenerSaid("LISTEN \"pgpush_queued\"") })

        try database.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{\"alert\":\"hi\"}}')",
                           [Self.token(inserted + 1)])
        try await Self.waitUntilFinished(database)
        #expect(try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'delivered'").int(0, 0)
                == inserted + 1)
        worker.stop()
        try await running.value
    }

    /// Rows at 100/s, one per claim, are also a stream: the worker claims at their pace and
    /// stops listening, where it took a NOTIFY per row before (ClaimSchedule.pollingRate).
    @Test func rowsAtAHundredASecondAreClaimedWithoutWakeUps() async throws {
        let harness = try SimulatorHarness(faults: FaultPlan())
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        let worker = try Self.wakeUpWorker(harness, conninfo: conninfo, id: "trickle-worker")
        let running = Task { try await worker.run() }
        defer { worker.stop() }
        let monitor = try PostgresConnection(conninfo: try TestDatabase.session(conninfo))
        let listenerSaid = { try Self.listener(of: monitor, said: $0) }
        #expect(try await eventually { try listenerSaid("LISTEN \"pgpush_queued\"") })

        // One row every 10 ms, each due at its own instant, until the listener stops.
        let clock = ContinuousClock(), start = clock.now, giveUp = start + .seconds(120)
        var inserted = 0, unlistened = false
        while !unlistened && clock.now < giveUp {
            try await Task.sleep(until: start + .milliseconds(10) * inserted, clock: clock)
            try database.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{\"alert\":\"hi\"}}')",
                               [Self.token(inserted + 1)])
            inserted += 1
            if inserted % 10 == 0 { unlistened = try listenerSaid("UNLISTEN \"pgpush_queued\"") }
        }
        #expect(unlistened, "still listening after \(inserted) rows at 100/s")
        try await Self.waitUntilFinished(database)
        #expect(try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'delivered'").int(0, 0)
                == inserted)
        worker.stop()
        try await running.value
    }

    /// The worker logged in as a member of pgpush_worker only (sql/roles.sql), and the rows
    /// enqueued by a member of pgpush_app granted the app: the worker's column grants and
    /// row-level security cover everything it writes (claims, deliveries, error rows, an invalid
    /// token, heartbeats, app health, deregistering). As the superuser none of this is checked.
    @Test func runsWithOnlyTheWorkerRole() async throws {
        let unregistered = Self.token(910_001), flaky = Self.token(910_002)
        var faults = FaultPlan()
        faults.unregisteredTokens = [unregistered]
        faults.scripts = [flaky: [try ScriptedAnswer(parsing: "503")]]
        let harness = try SimulatorHarness(faults: faults)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.applyRoles(database)
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let application = try PostgresConnection(conninfo: TestDatabase.login(
            database, conninfo: conninfo, role: "e2e_app_\(suffix)", group: "pgpush_app", apps: ["default"]))
        let workerConninfo = try TestDatabase.login(database, conninfo: conninfo, role: "e2e_worker_\(suffix)", group: "pgpush_worker")
        try application.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{\"aps\":{\"alert\":\"hi\"}}')",
                               [(1...20).map(Self.token) + [unregistered, flaky]])

        var configuration = WorkerConfiguration(databaseURL: workerConninfo, apps: [harness.app], workerID: "role-worker")
        configuration.apps[0].retry = Self.fastRetries()
        configuration.pollInterval = .milliseconds(50)
        let worker = try Worker(configuration: configuration, senders: try SenderFactory.makeSenders(for: [harness.app]),
                                log: Log(minimum: .warning))
        let running = Task { try await worker.run() }
        try await Self.waitUntilFinished(database)
        worker.stop()
        try await running.value

        #expect(try Self.counts(database, "SELECT status, count(*) FROM pgpush.notifications GROUP BY 1") == ["delivered": 21, "failed": 1])
        #expect(try Self.counts(database, "SELECT reason, count(*) FROM pgpush.delivery_errors GROUP BY 1")
                == ["ServiceUnavailable": 1, "Unregistered": 1])
        #expect(try database.query("SELECT count(*) FROM pgpush.invalid_tokens").int(0, 0) == 1)
        #expect(try database.query("SELECT healthy FROM pgpush.app_health WHERE app = 'default'").bool(0, 0) == true)
        #expect(try database.query("SELECT count(*) FROM pgpush.workers").int(0, 0) == 0)
        // The application reads its outcomes.
        #expect(try application.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'delivered'").int(0, 0) == 21)
    }

    @Test func stopReturnsUnsentRowsAndExitsCleanly() async throws {
        // One connection at 20/s and a backlog of 400: most rows are still queued when the stop comes.
        let harness = try SimulatorHarness(faults: FaultPlan(), ratePerConnection: 20, connections: 1)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 400)
        let worker = try harness.worker(conninfo: conninfo, id: "draining-worker", log: Log(minimum: .warning)) {
            $0.drainTimeout = .seconds(10)
        }
        let running = Task { try await worker.run() }
        #expect(try await eventually {
            try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'delivered'").int(0, 0) ?? 0 >= 5
        })
        worker.stop()
        try await running.value

        let states = try Self.counts(database, "SELECT status, count(*) FROM pgpush.notifications GROUP BY 1")
        #expect(states["sending"] == nil)
        #expect((states["delivered"] ?? 0) + (states["queued"] ?? 0) == 400)
        #expect((states["queued"] ?? 0) > 0)
        // Rows given back spent no attempt and carry no lease.
        let released = try database.query("""
            SELECT count(*) FROM pgpush.notifications
             WHERE status = 'queued' AND (attempts <> 0 OR locked_by IS NOT NULL)
            """)
        #expect(released.int(0, 0) == 0)
        #expect(harness.simulator.report().totalRequests == states["delivered"])
        #expect(try database.query("SELECT count(*) FROM pgpush.workers").int(0, 0) == 0)
    }

    /// A stop that comes while a claim is on its way, with nothing else in flight: the rows
    /// that claim returns are given back before the worker exits. The outcome writer used
    /// to quit as soon as nothing was in flight, before the claim came back, and its rows
    /// stayed `sending` until their leases ran out.
    @Test func rowsOfAClaimInProgressAtStopAreGivenBack() async throws {
        let harness = try SimulatorHarness(faults: FaultPlan())
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 5)
        // EXCLUSIVE conflicts with the claim's row locks, not with reading: the claim waits here.
        let blocker = try PostgresConnection(conninfo: conninfo)
        try blocker.query("BEGIN")
        try blocker.query("LOCK TABLE pgpush.notifications IN EXCLUSIVE MODE")
        let worker = try harness.worker(conninfo: conninfo, id: "stopped-mid-claim", log: Log(minimum: .error)) {
            $0.drainTimeout = .seconds(10)
        }
        let running = Task { try await worker.run() }
        let claimWaits = try await eventually(timeout: stateWaitLimit) {
            try database.query("""
                SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%claim%'
                """).int(0, 0) ?? 0 > 0
        }
        #expect(claimWaits, "the worker's claim never waited for the lock")
        worker.stop()
        // Long enough for a writer that quits early to have quit (it checks every flush interval).
        try await Task.sleep(for: .milliseconds(500))
        try blocker.query("COMMIT")
        try await running.value
        let states = try Self.counts(database, "SELECT status, count(*) FROM pgpush.notifications GROUP BY 1")
        #expect(states == ["queued": 5], "\(states)")
        #expect(harness.simulator.report().totalRequests == 0)
    }

    /// An operator's `DELETE FROM pgpush.workers` (or a cleanup job) removes a live
    /// worker's row: its next heartbeat finds no row to update and registers it again,
    /// so the worker shows in status and is not mistaken for a dead one.
    @Test func aDeletedWorkerRowIsRegisteredAgain() async throws {
        let harness = try SimulatorHarness(faults: FaultPlan())
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        let worker = try harness.worker(conninfo: conninfo, id: "deleted-worker", log: Log(minimum: .warning))
        let running = Task { try await worker.run() }
        defer { worker.stop() }
        let registered = "SELECT count(*) FROM pgpush.workers WHERE id = 'deleted-worker' AND host <> '' AND pid > 0"
        #expect(try await eventually { try database.query(registered).int(0, 0) == 1 })
        try database.query("DELETE FROM pgpush.workers")
        // Heartbeats come every 5 s; a loaded machine gets generous time.
        #expect(try await eventually(timeout: .seconds(180)) { try database.query(registered).int(0, 0) == 1 },
                "the worker never registered again after its row was deleted")
        worker.stop()
        try await running.value
        #expect(try database.query("SELECT count(*) FROM pgpush.workers").int(0, 0) == 0)
    }

    /// With the database gone, each failing duty logs once, not once per attempt: the
    /// claim loop woke on every doorbell ring and logged every try.
    @Test func anOutageIsLoggedOnceNotPerAttempt() async throws {
        let harness = try SimulatorHarness(faults: FaultPlan())
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        let name = try database.query("SELECT current_database()").string(0, 0) ?? ""
        let lines = Locked<[String]>([])
        let worker = try harness.worker(conninfo: conninfo, id: "outage-worker",
                                        log: Log(minimum: .warning, sink: { line in lines.withLock { $0.append(line) } })) {
            $0.drainTimeout = .seconds(2)
        }
        let running = Task { try await worker.run() }
        defer { worker.stop() }
        #expect(try await eventually { try database.query("SELECT count(*) FROM pgpush.workers").int(0, 0) == 1 })
        let admin = try PostgresConnection(conninfo: try TestDatabase.cluster.get().conninfo())
        try admin.query("DROP DATABASE \(name) WITH (FORCE)")
        func claimFailures() -> Int { lines.withLock { $0.filter { $0.contains(" claim_failed ") }.count } }
        #expect(try await eventually(timeout: .seconds(180)) { claimFailures() >= 1 }, "\(lines.withLock { $0 })")
        // Twelve seconds of outage: backoff alone would still log each of several tries.
        try await Task.sleep(for: .seconds(12))
        #expect(claimFailures() == 1, "\(lines.withLock { $0 })")
        worker.stop()
        try await running.value
    }
}

extension SimulatorHarness {
    /// A worker for this simulator's app, quiet unless `log` says otherwise; `configure`
    /// adjusts its configuration.
    func worker(conninfo: String, id: String, log: Log = Log(sink: { _ in }),
                configure: (inout WorkerConfiguration) -> Void = { _ in }) throws -> Worker {
        var configuration = WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: id)
        configure(&configuration)
        return try Worker(configuration: configuration, senders: try SenderFactory.makeSenders(for: [app]), log: log)
    }
}
