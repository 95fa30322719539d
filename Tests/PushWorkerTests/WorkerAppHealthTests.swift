import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import PushCrypto
import PushWorker
import Testing

/// App-level problems: the app is flagged in `pgpush.app_health`, and credential
/// errors keep its rows queued instead of burning them as failed.
@Suite struct WorkerAppHealthTests {

    @Test func wrongCredentialsPauseTheAppAndKeepRowsQueued() async throws {
        let harness = try SimulatorHarness(faults: FaultPlan())
        defer { harness.stop() }
        // The worker signs with a key the simulator does not know.
        let strangerKey = harness.directory.appendingPathComponent("Stranger.p8").path
        try ES256PrivateKey.generate().writePKCS8(toFile: strangerKey)
        var app = harness.app
        app.authentication = .token(teamID: "TEAM123456", keyID: "KEY1234567", keyFile: strangerKey)

        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 20)
        let worker = try Worker(configuration: WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: "w"),
                                senders: try SenderFactory.makeSenders(for: [app]), log: Log(sink: { _ in }))
        let running = Task { try await worker.run() }
        var health: PostgresResult?
        for _ in 0..<500 {
            let row = try database.query("SELECT healthy, reason FROM pgpush.app_health WHERE app = 'default'")
            if row.rowCount == 1 { health = row; break }
            try await Task.sleep(for: .milliseconds(20))
        }
        worker.stop()
        try await running.value
        #expect(health?.bool(0, 0) == false)
        #expect(health?.string(0, 1) == "InvalidProviderToken")
        let states = try WorkerEndToEndTests.counts(database, "SELECT status, count(*) FROM pgpush.notifications GROUP BY 1")
        #expect(states == ["queued": 20])
        let spent = try database.query("SELECT count(*) FROM pgpush.notifications WHERE attempts > 0")
        #expect(spent.int(0, 0) == 0)
        #expect(harness.simulator.report().count(reason: "InvalidProviderToken") >= 1)
    }

    @Test func mostlyBadDeviceTokenFlagsALikelyEnvironmentMismatch() async throws {
        var faults = FaultPlan()
        faults.statusMix = [FaultPlan.MixEntry(answer: try ScriptedAnswer(parsing: "BadDeviceToken"), probability: 0.9)]
        faults.seed = 7
        let harness = try SimulatorHarness(faults: faults)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 120)
        let worker = try harness.worker(conninfo: conninfo, id: "w")
        let running = Task { try await worker.run() }
        try await WorkerEndToEndTests.waitUntilFinished(database)
        worker.stop()
        try await running.value
        let health = try database.query("SELECT healthy, reason FROM pgpush.app_health WHERE app = 'default'")
        #expect(health.bool(0, 0) == false)
        #expect(health.string(0, 1) == "LikelyEnvironmentMismatch")
        let invalid = try database.query("SELECT count(*) FROM pgpush.invalid_tokens WHERE reason = 'BadDeviceToken'")
        #expect((invalid.int(0, 0) ?? 0) > 60)
    }
}
