import APNsClient
import APNsSimulator
import Foundation
import PGPushCore
import PGPushTestSupport
import Postgres
import PushWorker
import Testing

/// The answers a first real user met handled wrongly, each end to end: the worker against
/// a real PostgreSQL and the simulator over TLS + HTTP/2, checked in the table and at the
/// simulator.
@Suite struct AnswerHandlingTests {
    static let token = WorkerEndToEndTests.token
    static let alert = #"{"aps":{"alert":"x"}}"#

    struct Running {
        let worker: Worker
        let task: Task<Void, any Error>

        func stop() async throws {
            worker.stop()
            try await task.value
        }
    }

    static func start(_ app: AppConfiguration, _ conninfo: String, log: Log = Log(sink: { _ in })) throws -> Running {
        var configuration = WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: "answers-worker")
        configuration.apps[0].retry = WorkerEndToEndTests.fastRetries()
        configuration.pollInterval = .milliseconds(20)
        let worker = try Worker(configuration: configuration, senders: try SenderFactory.makeSenders(for: [app]), log: log)
        return Running(worker: worker, task: Task { try await worker.run() })
    }

    static func enqueue(_ database: PostgresConnection, tokens: [String], pushType: String = "alert",
                        payload: String = alert, topic: String? = nil) throws {
        try database.query("""
            SELECT pgpush.enqueue_many(device_tokens => $1, push_type => $2, payload => $3::jsonb, topic => $4)
            """, [tokens, pushType, payload, topic])
    }

    /// Forbidden is not retried (Apple: never retry it): the row fails with the reason at
    /// once, and the app is not paused. Before, it was taken for a credential error and
    /// the row stayed queued for ever.
    @Test func forbiddenFailsTheRowAndNothingElse() async throws {
        let forbidden = Self.token(7)
        var faults = FaultPlan()
        faults.scripts = [forbidden: [try ScriptedAnswer(parsing: "Forbidden")]]
        let harness = try SimulatorHarness(faults: faults)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try Self.enqueue(database, tokens: [forbidden] + (100...119).map(Self.token))
        let running = try Self.start(harness.app, conninfo)
        try await WorkerEndToEndTests.waitUntilFinished(database)
        try await running.stop()
        let row = try database.query("""
            SELECT status, attempts, last_status, last_reason FROM pgpush.notifications WHERE device_token = $1
            """, [forbidden])
        #expect(row.string(0, 0) == "failed")
        #expect(row.int(0, 1) == 1)
        #expect(row.int(0, 2) == 403)
        #expect(row.string(0, 3) == "Forbidden")
        #expect(try WorkerEndToEndTests.counts(database, "SELECT status, count(*) FROM pgpush.notifications GROUP BY 1")
                == ["delivered": 20, "failed": 1])
        let unhealthy = try database.query("SELECT count(*) FROM pgpush.app_health WHERE NOT healthy")
        #expect(unhealthy.int(0, 0) == 0)
    }

    /// A row that named its own topic and got DeviceTokenNotForTopic had the wrong topic,
    /// not a dead token: it fails, and the token is not listed as invalid.
    @Test func deviceTokenNotForARowsOwnTopicListsNoToken() async throws {
        let harness = try SimulatorHarness(faults: FaultPlan())
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        let token = Self.token(42)
        // The simulator knows the app as com.example.app: another app's topic is DeviceTokenNotForTopic.
        try Self.enqueue(database, tokens: [token], topic: "com.other.app")
        let running = try Self.start(harness.app, conninfo)
        try await WorkerEndToEndTests.waitUntilFinished(database)
        try await running.stop()
        let row = try database.query("SELECT status, last_reason FROM pgpush.notifications WHERE device_token = $1", [token])
        #expect(row.string(0, 0) == "failed")
        #expect(row.string(0, 1) == "DeviceTokenNotForTopic")
        #expect(try database.query("SELECT count(*) FROM pgpush.invalid_tokens").int(0, 0) == 0)
        #expect(harness.simulator.report().count(reason: "DeviceTokenNotForTopic") == 1)
    }

    /// However high the rate setting, a worker holds no more rows in flight than its
    /// connections carry (250 each): a whole backlog claimed at once would tick every
    /// lease and starve the other workers. Slow answers keep the rows in flight long
    /// enough to be seen. The table shows `sending` for rows in flight and for answered
    /// rows whose outcome waits for the batch writer: at most twice the bound. Without it
    /// the worker claimed all 3,000 at once.
    @Test func rowsInFlightAreBoundedByTheConnectionsWhateverTheRate() async throws {
        var faults = FaultPlan()
        faults.latencyMilliseconds = 1500
        let harness = try SimulatorHarness(faults: faults, ratePerConnection: 100_000, connections: 2)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        // Still more than the bound allows under ThreadSanitizer, in a drain it can finish.
        try Self.enqueue(database, tokens: (1...Sanitizers.scaled(3000, underThreadSanitizer: 1500)).map(Self.token))
        let running = try Self.start(harness.app, conninfo)
        var most = 0
        let drained = try await eventually(timeout: stateWaitLimit, every: .milliseconds(20)) {
            let row = try database.query("""
                SELECT count(*) FILTER (WHERE status = 'sending'), count(*) FILTER (WHERE status IN ('queued', 'sending'))
                  FROM pgpush.notifications
                """)
            most = max(most, row.int(0, 0) ?? 0)
            return row.int(0, 1) == 0
        }
        try await running.stop()
        #expect(drained)
        #expect(most > 0)
        #expect(most <= 2 * (2 * 250), "at most 500 rows in flight and 500 being written, saw \(most)")
    }
}

/// Provider tokens, topics and GOAWAY reasons: what the whole app or one topic does when
/// APNs refuses its credentials.
@Suite struct CredentialAnswerTests {
    static let token = WorkerEndToEndTests.token

    static func health(_ database: PostgresConnection, topic: String? = nil) async throws -> (healthy: Bool, reason: String)? {
        var found: (Bool, String)?
        _ = try await eventually(timeout: .seconds(180)) {
            let row = try database.query("""
                SELECT healthy, coalesce(reason, '') FROM pgpush.app_health
                 WHERE app = 'default' AND topic IS NOT DISTINCT FROM $1 AND NOT healthy
                """, [topic])
            if row.rowCount == 1, let healthy = row.bool(0, 0), let reason = row.string(0, 1) { found = (healthy, reason) }
            return found != nil
        }
        return found
    }

    /// A JWT refused although it was signed moments before (a clock an hour off, a revoked
    /// key) is a credential problem: the app is paused with a reason that says what to
    /// check, its rows stay queued, and the worker does not sign and resend in a loop.
    @Test func aFreshJWTRefusedTooPausesTheAppWithoutAStorm() async throws {
        var faults = FaultPlan()
        faults.expireEveryProviderToken = true
        let harness = try SimulatorHarness(faults: faults, connections: 2)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try AnswerHandlingTests.enqueue(database, tokens: (1...50).map(Self.token))
        let running = try AnswerHandlingTests.start(harness.app, conninfo)
        let health = try await Self.health(database)
        // The pause is 5 s; a little longer than one shows the probe did not storm either.
        try await Task.sleep(for: .seconds(6))
        try await running.stop()
        let report = harness.simulator.report()
        #expect(health?.healthy == false)
        #expect(health?.reason.hasPrefix("ExpiredProviderToken") == true)
        #expect(health?.reason.contains("clock") == true)
        #expect(try WorkerEndToEndTests.counts(database, "SELECT status, count(*) FROM pgpush.notifications GROUP BY 1")
                == ["queued": 50])
        #expect(try database.query("SELECT count(*) FROM pgpush.notifications WHERE attempts > 0").int(0, 0) == 0)
        // Two connections with the first JWT, one renewal, the probe: a handful, not a storm.
        #expect(report.count(reason: "ExpiredProviderToken") <= 8, "refusals: \(report.count(reason: "ExpiredProviderToken"))")
        #expect(report.connectionsOpened <= 8, "connections: \(report.connectionsOpened)")
    }

    /// A topic the key does not cover pauses that topic only: the app's alerts go out at
    /// full rate, the VoIP rows wait in `queued`, and `app_health` names the topic.
    @Test func aRefusedTopicPausesThatTopicOnly() async throws {
        var faults = FaultPlan()
        faults.topicAnswers = ["com.example.app.voip": try ScriptedAnswer(parsing: "TopicDisallowed")]
        let harness = try SimulatorHarness(faults: faults)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try AnswerHandlingTests.enqueue(database, tokens: (1...20).map(Self.token), pushType: "voip")
        try AnswerHandlingTests.enqueue(database, tokens: (101...200).map(Self.token))
        let running = try AnswerHandlingTests.start(harness.app, conninfo)
        let alertsDone = try await eventually(timeout: .seconds(180)) {
            try database.query("""
                SELECT count(*) FROM pgpush.notifications WHERE push_type = 'alert' AND status = 'delivered'
                """).int(0, 0) == 100
        }
        let health = try await Self.health(database, topic: "com.example.app.voip")
        try await running.stop()
        #expect(alertsDone)
        #expect(health?.reason == "TopicDisallowed")
        let counts = try WorkerEndToEndTests.counts(database, """
            SELECT push_type || ':' || status || coalesce(':' || last_reason, ''), count(*) FROM pgpush.notifications GROUP BY 1
            """)
        #expect(counts.filter { $0.key.hasPrefix("alert:") } == ["alert:delivered": 100], "\(counts)")
        // Every VoIP row waits in `queued`. On a loaded machine a request may also go
        // unanswered in time; a row whose retries that used up may end `failed` for that
        // cause, never for its topic and never delivered.
        let ended = try database.query("""
            SELECT count(*) FROM pgpush.notifications
             WHERE push_type = 'voip' AND status <> 'queued'
               AND NOT (status = 'failed' AND last_reason IN ('DeadlineExceeded', 'ConnectionLost', 'CouldNotConnect'))
            """).int(0, 0)
        #expect(ended == 0, "\(counts)")
        #expect(counts.filter { $0.key.hasPrefix("voip:queued") }.values.reduce(0, +) >= 15, "\(counts)")
        let wholeApp = try database.query("SELECT count(*) FROM pgpush.app_health WHERE topic IS NULL AND NOT healthy")
        #expect(wholeApp.int(0, 0) == 0)
        // One refusal pauses the topic; the rest of its rows wait without a request. Requests
        // already on their way when the first refusal comes back are refused too: how many
        // depends on the machine (4 once under ThreadSanitizer beside other suites), never
        // most of the topic's 20 rows.
        let refusals = harness.simulator.report().count(reason: "TopicDisallowed")
        #expect(refusals <= 8, "refusals: \(refusals)")
    }

    /// APNs closing each connection with GOAWAY `{"reason":"BadCertificateEnvironment"}`
    /// and last_stream_id 0 is an answer for the app: paused, rows queued and uncounted,
    /// the reason in `app_health` — not a resend loop that ends in `failed`.
    @Test func aGoAwayWithACredentialReasonPausesTheApp() async throws {
        var faults = FaultPlan()
        faults.goAwayBeforeFirstStream = "BadCertificateEnvironment"
        let harness = try SimulatorHarness(faults: faults)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try AnswerHandlingTests.enqueue(database, tokens: (1...30).map(Self.token))
        let running = try AnswerHandlingTests.start(harness.app, conninfo)
        let health = try await Self.health(database)
        try await Task.sleep(for: .seconds(2))
        try await running.stop()
        #expect(health?.reason == "BadCertificateEnvironment")
        #expect(try WorkerEndToEndTests.counts(database, "SELECT status, count(*) FROM pgpush.notifications GROUP BY 1")
                == ["queued": 30])
        #expect(try database.query("SELECT count(*) FROM pgpush.notifications WHERE attempts > 0").int(0, 0) == 0)
        let report = harness.simulator.report()
        #expect(report.count(goAwayReason: "BadCertificateEnvironment") >= 1)
        #expect(report.connectionsOpened <= 10, "connections: \(report.connectionsOpened)")
    }
}

/// What the worker keeps from an answer and what it sends for the new row columns.
@Suite struct RowColumnTests {
    static let token = WorkerEndToEndTests.token

    /// `apns-unique-id` (the development environment's key to Apple's delivery log) is
    /// kept on the row and on its error row, for successes and errors alike.
    @Test func theAnswersUniqueIDIsKeptOnTheRowAndItsErrorRow() async throws {
        let dead = Self.token(2)
        var faults = FaultPlan()
        faults.unregisteredTokens = [dead]
        let harness = try SimulatorHarness(faults: faults)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try AnswerHandlingTests.enqueue(database, tokens: [Self.token(1), dead])
        let running = try AnswerHandlingTests.start(harness.app, conninfo)
        try await WorkerEndToEndTests.waitUntilFinished(database)
        try await running.stop()
        let rows = try database.query("""
            SELECT n.status, n.apns_unique_id::text, e.apns_unique_id::text
              FROM pgpush.notifications n LEFT JOIN pgpush.delivery_errors e ON e.notification_id = n.id
             ORDER BY n.device_token
            """)
        #expect(rows.rowCount == 2)
        #expect(rows.string(0, 0) == "delivered")
        #expect(rows.string(0, 1) != nil)
        #expect(rows.string(1, 0) == "failed")
        #expect(rows.string(1, 1) != nil)
        #expect(rows.string(1, 2) == rows.string(1, 1))
        #expect(rows.string(0, 1) != rows.string(1, 1))
    }

    /// `deliver_once` sends `apns-expiration: 0`, also for a row with its own `expires_at`,
    /// which still ends the row in the queue.
    @Test func deliverOnceSendsExpirationZero() async throws {
        let harness = try SimulatorHarness(faults: FaultPlan(), logRequests: true)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try database.query("""
            SELECT pgpush.enqueue(device_token => $1, payload => '{"aps":{"alert":"now or never"}}'::jsonb,
                                  deliver_once => true, expires_at => now() + interval '1 hour')
            """, [Self.token(1)])
        try database.query("""
            SELECT pgpush.enqueue(device_token => $1, payload => '{"aps":{"alert":"keep trying"}}'::jsonb,
                                  expires_at => '2030-01-01T00:00:00Z')
            """, [Self.token(2)])
        let running = try AnswerHandlingTests.start(harness.app, conninfo)
        try await WorkerEndToEndTests.waitUntilFinished(database)
        try await running.stop()
        let log = try harness.stopAndReadLog()
        #expect(log.first { $0.token == Self.token(1) }?.headers["apns-expiration"] == "0")
        #expect(log.first { $0.token == Self.token(2) }?.headers["apns-expiration"] == "1893456000")
    }

    /// After APNs answered Unregistered, later rows for the token fail as KnownInvalidToken
    /// without a request, until the app says the token is registered again.
    @Test func deadTokensAreNotSentAgainUntilRegisteredAgain() async throws {
        let dead = Self.token(9)
        var faults = FaultPlan()
        faults.unregisteredTokens = [dead]
        let harness = try SimulatorHarness(faults: faults)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        let running = try AnswerHandlingTests.start(harness.app, conninfo)
        try AnswerHandlingTests.enqueue(database, tokens: [dead])
        try await WorkerEndToEndTests.waitUntilFinished(database)
        try AnswerHandlingTests.enqueue(database, tokens: [dead, dead.uppercased(), Self.token(10)])
        try await WorkerEndToEndTests.waitUntilFinished(database)
        let requestsBefore = harness.simulator.report().totalRequests
        try database.query("SELECT pgpush.token_registered('default', $1)", [dead])
        try AnswerHandlingTests.enqueue(database, tokens: [dead])
        try await WorkerEndToEndTests.waitUntilFinished(database)
        try await running.stop()
        let rows = try database.query("""
            SELECT status, attempts, last_reason FROM pgpush.notifications WHERE lower(device_token) = $1 ORDER BY id
            """, [dead])
        #expect(rows.rowCount == 4)
        #expect(rows.string(0, 2) == "Unregistered")
        for row in 1...2 {
            #expect(rows.string(row, 0) == "failed")
            #expect(rows.int(row, 1) == 0)
            #expect(rows.string(row, 2) == "KnownInvalidToken")
        }
        // Sent again once registered (the simulator still calls it unregistered).
        #expect(rows.string(3, 2) == "Unregistered")
        #expect(rows.int(3, 1) == 1)
        #expect(requestsBefore == 2, "one request for the first row and one for the other token")
    }
}

/// The retry counts and delays are settings: one read from the environment as `pgpush run`
/// reads it decides how often a 5xx row is tried.
@Suite struct RetrySettingsTests {
    @Test func theServerErrorRetriesSettingDecidesTheAttempts() async throws {
        let flaky = WorkerEndToEndTests.token(5)
        var faults = FaultPlan()
        // With the default three retries this row would be delivered on its third attempt.
        faults.scripts = [flaky: [try ScriptedAnswer(parsing: "503"), try ScriptedAnswer(parsing: "503"),
                                  try ScriptedAnswer(parsing: "200")]]
        let harness = try SimulatorHarness(faults: faults)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try AnswerHandlingTests.enqueue(database, tokens: [flaky])
        var configuration = try WorkerConfiguration.load(flags: [:], environment: [
            "DATABASE_URL": conninfo, "PGPUSH_TOPIC": WorkerEndToEndTests.bundleID, "PGPUSH_TEAM_ID": "TEAM123456",
            "PGPUSH_KEY_ID": "KEY1234567", "PGPUSH_KEY_FILE": harness.directory.appendingPathComponent("AuthKey.p8").path,
            "PGPUSH_APNS_URL": harness.simulator.baseURL ?? "", "PGPUSH_CA_FILE": harness.simulator.caCertificatePath ?? "",
            "PGPUSH_CONNECTIONS": "1", "PGPUSH_RETRY_SERVER_ERRORS": "1",
            "PGPUSH_RETRY_DELAY_MIN_SECONDS": "0.05", "PGPUSH_RETRY_DELAY_MAX_SECONDS": "0.1",
        ])
        configuration.pollInterval = .milliseconds(20)
        let worker = try Worker(configuration: configuration, senders: try SenderFactory.makeSenders(for: configuration.apps),
                                log: Log(sink: { _ in }))
        let running = Task { try await worker.run() }
        try await WorkerEndToEndTests.waitUntilFinished(database)
        worker.stop()
        try await running.value
        let row = try database.query("SELECT status, attempts, last_status FROM pgpush.notifications")
        #expect(row.string(0, 0) == "failed")
        #expect(row.int(0, 1) == 2)
        #expect(row.int(0, 2) == 503)
        #expect(harness.simulator.report().count(status: 503) == 2)
    }
}
