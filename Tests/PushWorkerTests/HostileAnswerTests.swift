import APNsSimulator
import Foundation
import Locking
import PGPushTestSupport
import Postgres
import PushQueue
import PushWorker
import Testing

/// Answers whose values PostgreSQL refuses, and outcome statements PostgreSQL refuses for
/// one row's sake: neither may stop the other outcomes from being written, and no row may
/// go to APNs twice because of it. Before 0.4.0 one such value failed every batch it was
/// in, for ever: no outcome was written again and lease rescue sent every delivered row a
/// second time.
@Suite struct HostileAnswerTests {
    static let token = WorkerEndToEndTests.token

    static func lines(_ sink: Locked<[String]>) -> Log {
        Log(minimum: .warning, sink: { line in sink.withLock { $0.append(line) } })
    }

    struct Delivered {
        let database: PostgresConnection
        /// Requests the simulator saw, per device token.
        let requestsPerToken: [String: Int]
        let lines: [String]
    }

    /// `tokens` enqueued as alerts and delivered by one worker against a simulator answering
    /// by `scripts` (the rest 200), until no row is unfinished; `prepare` runs on the migrated
    /// database first.
    static func deliver(_ tokens: [String], scripts: [String: [ScriptedAnswer]],
                        prepare: (PostgresConnection) throws -> Void = { _ in }) async throws -> Delivered {
        var faults = FaultPlan()
        faults.scripts = scripts
        let harness = try SimulatorHarness(faults: faults, logRequests: true)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try prepare(database)
        try AnswerHandlingTests.enqueue(database, tokens: tokens)
        let log = Locked<[String]>([])
        let running = try AnswerHandlingTests.start(harness.app, conninfo, log: Self.lines(log))
        try await WorkerEndToEndTests.waitUntilFinished(database)
        try await running.stop()
        let requests = try harness.stopAndReadLog()
        return Delivered(database: database,
                         requestsPerToken: Dictionary(grouping: requests.compactMap(\.token), by: { $0 }).mapValues(\.count),
                         lines: log.withLock { $0 })
    }

    /// A NUL in a reason (text PostgreSQL cannot store), a 410 timestamp 28,000 years back
    /// (outside PostgreSQL's timestamps), and a reason of 20,000 characters with C1
    /// controls and a line separator, among ordinary rows.
    @Test func valuesPostgreSQLWouldRefuseAreCleanedBeforeTheyReachIt() async throws {
        let withNUL = Self.token(7), ancient = Self.token(8), long = Self.token(9)
        let longReason = "\u{85}\u{2028}" + String(repeating: "X", count: 20_000)
        let run = try await Self.deliver([withNUL, ancient, long] + (100..<140).map(Self.token), scripts: [
            withNUL: [.answer(SimulatorAnswer(status: 400, reason: "Bad\u{0}Token"))],
            ancient: [.answer(SimulatorAnswer(status: 410, reason: "Unregistered",
                                              timestamp: Date(timeIntervalSince1970: -900_000_000_000)))],
            long: [.answer(SimulatorAnswer(status: 400, reason: longReason))],
        ])
        let database = run.database
        #expect(try WorkerEndToEndTests.counts(database, "SELECT status, count(*) FROM pgpush.notifications GROUP BY 1")
                == ["delivered": 40, "failed": 3])
        let nul = try database.query("SELECT last_reason FROM pgpush.notifications WHERE device_token = $1", [withNUL])
        #expect(nul.string(0, 0) == "Bad\u{FFFD}Token")
        let listed = try database.query("""
            SELECT reason, apple_timestamp IS NULL FROM pgpush.invalid_tokens WHERE device_token = $1
            """, [ancient])
        #expect(listed.rowCount == 1)
        #expect(listed.string(0, 0) == "Unregistered")
        #expect(listed.bool(0, 1) == true)
        let stored = try database.query("""
            SELECT octet_length(n.last_reason), octet_length(e.reason), n.last_reason ~ '[\\u0080-\\u009f\\u2028]'
              FROM pgpush.notifications n JOIN pgpush.delivery_errors e ON e.notification_id = n.id
             WHERE n.device_token = $1
            """, [long])
        #expect(stored.rowCount == 1)
        #expect((stored.int(0, 0) ?? .max) <= Outcome.maxReasonBytes)
        #expect((stored.int(0, 1) ?? .max) <= Outcome.maxReasonBytes)
        #expect(stored.bool(0, 2) == false)
        // Every row went to APNs once.
        #expect(run.requestsPerToken.count == 43)
        #expect(run.requestsPerToken.values.allSatisfy { $0 == 1 }, "\(run.requestsPerToken.filter { $0.value > 1 })")
        #expect(!run.lines.contains { $0.contains("outcome_write_failed") }, "\(run.lines)")
    }

    /// A statement PostgreSQL refuses for one row's sake (here a trigger raising for one
    /// reason, standing in for any value the cleaning does not foresee): the batch is split
    /// until that row is alone, every other outcome is written, and that row ends `failed`
    /// with `OutcomeRefused` instead of blocking the writer.
    @Test func aRowWhoseOutcomeIsRefusedIsSetApartAndTheRestAreWritten() async throws {
        let refused = Self.token(7)
        let run = try await Self.deliver([refused] + (100..<160).map(Self.token),
                                         scripts: [refused: [.answer(SimulatorAnswer(status: 400, reason: "BadCollapseId"))]]) {
            try $0.execute(script: """
                CREATE FUNCTION public.refuse_one_reason() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NEW.last_reason = 'BadCollapseId' THEN
                        RAISE EXCEPTION 'refused for the test' USING ERRCODE = '22023';
                    END IF;
                    RETURN NEW;
                END $$;
                CREATE TRIGGER refuse_one_reason BEFORE UPDATE ON pgpush.notifications
                    FOR EACH ROW EXECUTE FUNCTION public.refuse_one_reason();
                """)
        }
        let database = run.database
        #expect(try WorkerEndToEndTests.counts(database, "SELECT status, count(*) FROM pgpush.notifications GROUP BY 1")
                == ["delivered": 60, "failed": 1])
        let row = try database.query("""
            SELECT status, last_status, last_reason FROM pgpush.notifications WHERE device_token = $1
            """, [refused])
        #expect(row.string(0, 0) == "failed")
        #expect(row.int(0, 1) == 400)
        #expect(row.string(0, 2) == "OutcomeRefused")
        #expect(run.requestsPerToken.count == 61)
        #expect(run.requestsPerToken.values.allSatisfy { $0 == 1 }, "\(run.requestsPerToken.filter { $0.value > 1 })")
        let lines = run.lines
        #expect(lines.filter { $0.contains(" outcome_refused ") }.count == 1, "\(lines)")
        #expect(lines.contains { $0.contains(" outcome_refused ") && $0.contains("22023") }, "\(lines)")
    }

    /// An error body past the HTTP/2 client's bound (64 KiB; 50 MB bodies once held 1 GB):
    /// the stream is abandoned, the row follows the no-answer rule (retried, then `failed`
    /// with `ResponseTooLarge`), the log names the bound, and other rows are not touched.
    @Test func anAnswerPastTheBodyBoundIsAbandonedAndNamed() async throws {
        let big = Self.token(7)
        let huge = SimulatorAnswer(status: 400, reason: String(repeating: "X", count: 100_000))
        let run = try await Self.deliver([big] + (100..<110).map(Self.token),
                                         scripts: [big: Array(repeating: .answer(huge), count: 4)])
        let row = try run.database.query("""
            SELECT status, attempts, last_reason FROM pgpush.notifications WHERE device_token = $1
            """, [big])
        #expect(row.string(0, 0) == "failed")
        #expect(row.int(0, 1) == 4)
        #expect(row.string(0, 2) == "ResponseTooLarge")
        #expect(run.requestsPerToken[big] == 4)
        #expect(run.requestsPerToken.filter { $0.key != big }.values.allSatisfy { $0 == 1 })
        #expect(run.lines.contains { $0.contains(" response_too_large ") && $0.contains("65536") }, "\(run.lines)")
    }

    /// When every outcome statement is refused for a reason that is not the data's (here a
    /// lock that cannot be had, SQLSTATE 55P03) until shutdown, the shutdown line names
    /// that cause, not an unreachable database.
    @Test func theShutdownLineNamesTheRealCause() async throws {
        let harness = try SimulatorHarness(faults: FaultPlan())
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try database.execute(script: """
            CREATE FUNCTION public.refuse_outcomes() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.status <> 'sending' THEN
                    RAISE EXCEPTION 'no lock for the test' USING ERRCODE = '55P03';
                END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER refuse_outcomes BEFORE UPDATE ON pgpush.notifications
                FOR EACH ROW WHEN (OLD.status = 'sending') EXECUTE FUNCTION public.refuse_outcomes();
            """)
        try AnswerHandlingTests.enqueue(database, tokens: (100..<110).map(Self.token))
        let log = Locked<[String]>([])
        let worker = try harness.worker(conninfo: conninfo, id: "refused-worker", log: Self.lines(log)) {
            $0.drainTimeout = .seconds(2)
        }
        let running = Task { try await worker.run() }
        #expect(try await eventually(timeout: stateWaitLimit) {
            log.withLock { $0.contains { $0.contains(" outcome_write_failed ") } }
        })
        worker.stop()
        try await running.value
        let lines = log.withLock { $0 }
        let abandoned = lines.filter { $0.contains(" outcomes_abandoned ") }
        #expect(abandoned.count == 1, "\(lines)")
        #expect(abandoned.allSatisfy { $0.contains("55P03") && !$0.contains("unreachable") }, "\(lines)")
    }

    /// Under a `statement_timeout` shorter than a full claim (10 ms here, against 1,000-row
    /// claims), every claim used to fail for ever: one row in 50 s, nothing logged but
    /// `claim_failed 57014`. Claims (and outcome batches) now halve until they fit, and the
    /// log says so once (and then once per interval while it lasts, with a count).
    @Test(.disabled(if: TestDatabase.throughPooler, "PgBouncer refuses the options startup parameter"))
    func claimsShrinkUntilTheyFitAShortStatementTimeout() async throws {
        let harness = try SimulatorHarness(faults: FaultPlan())
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        let total = 6_000
        try TestDatabase.enqueueAlerts(database, count: total)
        let log = Locked<[String]>([])
        let worker = try harness.worker(conninfo: conninfo + " options='-c statement_timeout=10'", id: "timeout-worker",
                                        log: Self.lines(log)) { $0.drainTimeout = .seconds(5) }
        let started = ContinuousClock.now
        let running = Task { try await worker.run() }
        func delivered() throws -> Int {
            try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'delivered'").int(0, 0) ?? 0
        }
        let progressed = try await eventually(timeout: .seconds(240), every: .milliseconds(200)) { try delivered() >= 2_000 }
        worker.stop()
        try await running.value
        let lines = log.withLock { $0 }
        let count = try delivered()
        #expect(progressed, "\(count) delivered; \(lines.suffix(20))")
        // Once, then at most once per RepeatedWarnings interval (30 s) with a count; the line
        // saying claims are full-sized again (`state=recovered`) is not one of them.
        let timedOut = lines.filter { $0.contains(" claim_timed_out ") && !$0.contains("state=recovered") }
        #expect(timedOut.count >= 1 && timedOut.count <= Int((ContinuousClock.now - started) / .seconds(30)) + 1, "\(lines)")
        #expect(!lines.contains { $0.contains(" outcome_write_failed ") }, "\(lines.suffix(20))")
        #expect(!lines.contains { $0.contains(" claim_failed ") }, "\(lines.suffix(20))")
        // Nothing lost: every row is delivered or back in the queue.
        #expect(try WorkerEndToEndTests.counts(database, "SELECT status, count(*) FROM pgpush.notifications GROUP BY 1")
                    .filter { $0.key != "delivered" && $0.key != "queued" }.isEmpty)
    }
}
