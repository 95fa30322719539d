import APNsSimulator
import Foundation
import PGPushCore
import PGPushOperator
import PGPushTestSupport
import Postgres
import PushWorker
import Testing

/// Requeue and the dead-token feed with a worker sending to the APNs simulator over TLS +
/// HTTP/2 (the SQL of each is tested in PushQueueTests).
@Suite struct DailyOperationsDeliveryTests {
    static func runWorker(_ harness: SimulatorHarness, conninfo: String, id: String) throws -> (Worker, Task<Void, any Error>) {
        let app = harness.app
        let worker = try Worker(configuration: WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: id),
                                senders: try SenderFactory.makeSenders(for: [app]), log: Log(sink: { _ in }))
        return (worker, Task { try await worker.run() })
    }

    /// Rows failed by an outage (`CouldNotConnect`, out of attempts) and requeued with
    /// `pgpush requeue`'s request are sent and delivered, each once, with attempts from zero;
    /// rows that failed for another reason stay failed.
    @Test func requeuedRowsAreDelivered() async throws {
        let harness = try SimulatorHarness()
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try database.query("""
            INSERT INTO pgpush.notifications (device_token, payload, status, attempts, claim_count, finished_at, last_reason)
            SELECT lpad(to_hex(g), 64, '0'), '{"aps":{"alert":"x"}}', 'failed', 4, 4, now() - interval '1 hour',
                   CASE WHEN g <= 8 THEN 'CouldNotConnect' ELSE 'BadDeviceToken' END
              FROM generate_series(1, 10) AS g
            """)
        let (worker, running) = try Self.runWorker(harness, conninfo: conninfo, id: "requeue")
        defer { worker.stop() }
        #expect(try RequeueRequest(app: "default", reason: "CouldNotConnect", since: Date().addingTimeInterval(-7200))
            .requeue(on: database) == 8)
        #expect(try await eventually(timeout: stateWaitLimit) {
            try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'delivered'").int(0, 0) == 8
        })
        worker.stop()
        try await running.value
        #expect(try database.query("SELECT array_agg(DISTINCT attempts) FROM pgpush.notifications WHERE status = 'delivered'")
            .string(0, 0) == "{1}")
        #expect(try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'failed'").int(0, 0) == 2)
        #expect(harness.simulator.report().totalRequests == 8)
    }

    /// APNs answers 410 for a token: an application listening on pgpush_invalid_token hears
    /// it once, as JSON, while the rows to other tokens are delivered.
    @Test func aTokenAPNsSaysIsGoneIsAnnounced() async throws {
        let dead = String(repeating: "d", count: 64)
        var faults = FaultPlan()
        faults.unregisteredTokens = [dead]
        let harness = try SimulatorHarness(faults: faults)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        // LISTEN needs a session: through a transaction pooler, a direct connection.
        let listener = try PostgresConnection(conninfo: try TestDatabase.session(conninfo))
        try listener.listen("pgpush_invalid_token")
        try TestDatabase.enqueueAlerts(database, count: 5)
        try database.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{\"alert\":\"x\"}}')", [dead])
        let (worker, running) = try Self.runWorker(harness, conninfo: conninfo, id: "feed")
        defer { worker.stop() }
        var heard: [PostgresNotification] = []
        _ = try await eventually(timeout: stateWaitLimit) {
            heard += try listener.waitForNotifications(timeout: .milliseconds(50))
            return !heard.isEmpty
        }
        try await WorkerEndToEndTests.waitUntilFinished(database)
        worker.stop()
        try await running.value
        heard += try listener.waitForNotifications(timeout: .milliseconds(200))
        #expect(heard.count == 1, "\(heard)")
        let json = try #require(heard.first.flatMap { JSONValue.parse(Array($0.payload.utf8)) })
        #expect(json["token"]?.stringValue == dead && json["reason"]?.stringValue == "Unregistered")
        #expect(json["app"]?.stringValue == "default" && json["service"]?.stringValue == "apns")
    }
}
