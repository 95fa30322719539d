import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import PushQueue
import PushWorker
import Testing

/// `rate_per_app` (sql/018_daily_operations.sql): workers share an app's rate through the
/// database, whoever comes and goes. The exact bound and the sustained rate at the limit are
/// measured with the reliability suite, which runs alone (`RatePerAppAtTheLimitTests`);
/// here, beside the whole suite, the shares themselves and a bound with room.
@Suite(.serialized) struct RatePerAppTests {
    static let rate = 150
    static let connections = 4

    static func worker(_ harness: SimulatorHarness, conninfo: String, id: String, ratePerApp: Int = rate) throws -> Worker {
        var app = harness.app(connections: connections, ratePerConnection: 100)
        app.ratePerApp = ratePerApp
        var configuration = WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: id)
        configuration.drainTimeout = .seconds(5)
        return try Worker(configuration: configuration, senders: try SenderFactory.makeSenders(for: [app]), log: Log(sink: { _ in }))
    }

    static func shares(_ database: PostgresConnection) throws -> [String: Int] {
        let result = try database.query("SELECT worker_id, share FROM pgpush.rate_shares WHERE expires_at > now()")
        return Dictionary(uniqueKeysWithValues: (0..<result.rowCount).map { (result.string($0, 0) ?? "", result.int($0, 1) ?? 0) })
    }

    /// Two workers hold 75 each; a third makes it 50 each; one leaving gives the other two 75
    /// again; the shares never add up to more than the rate. At the simulator the two workers'
    /// connections (800/s of connection caps) stay near the rate: the simulator counts by the
    /// kernel's receive time, which runs late under the whole suite's load (see
    /// WorkerDeliveryRulesTests), so a fifth more is allowed here; without a shared rate they
    /// send hundreds more (the next test).
    @Test func workersShareTheRateAsTheyComeAndGo() async throws {
        let harness = try SimulatorHarness(logRequests: true)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 20_000)
        var seen: [[String: Int]] = []
        // The shares settle once every worker renews within its lease (3 s); under a sanitizer
        // beside the whole suite on a busy machine renewals can lag past it for minutes, and
        // the shares move between the workers until they catch up.
        func sharesBecome(_ expected: [String: Int]) async throws -> Bool {
            try await eventually(timeout: stateWaitLimit) {
                let now = try Self.shares(database)
                seen.append(now)
                return now == expected
            }
        }
        let first = try Self.worker(harness, conninfo: conninfo, id: "rate-1")
        let second = try Self.worker(harness, conninfo: conninfo, id: "rate-2")
        let runs = [first, second].map { worker in Task { try await worker.run() } }
        defer { first.stop(); second.stop() }
        #expect(try await sharesBecome(["rate-1": 75, "rate-2": 75]), "\(seen.suffix(3))")
        let third = try Self.worker(harness, conninfo: conninfo, id: "rate-3")
        let thirdRun = Task { try await third.run() }
        defer { third.stop() }
        #expect(try await sharesBecome(["rate-1": 50, "rate-2": 50, "rate-3": 50]), "\(seen.suffix(3))")
        first.stop()
        try await runs[0].value
        #expect(try await sharesBecome(["rate-2": 75, "rate-3": 75]), "\(seen.suffix(3))")
        second.stop()
        third.stop()
        try await runs[1].value
        try await thirdRun.value
        #expect(seen.allSatisfy { $0.values.reduce(0, +) <= Self.rate }, "\(seen.filter { $0.values.reduce(0, +) > Self.rate })")
        // Given back: nothing holds a share after the workers stopped.
        #expect(try database.query("SELECT count(*) FROM pgpush.rate_shares WHERE share > 0").int(0, 0) == 0)
        let entries = try harness.stopAndReadLog()
        let most = SimulatorHarness.mostInAnySecond(entries)
        #expect(most <= Self.rate + Self.rate / 4, "\(most) in one second")
        #expect(try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'failed'").int(0, 0) == 0)
    }

    /// Without rate_per_app the same two workers send far more than 150/s (the bound above
    /// would fail): the bound comes from the shared rate, not from the connections.
    @Test func withoutARatePerAppTheWorkersSendFasterThanThat() async throws {
        let harness = try SimulatorHarness(logRequests: true)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 3000)
        let workers = try ["free-1", "free-2"].map { try Self.worker(harness, conninfo: conninfo, id: $0, ratePerApp: 0) }
        let runs = workers.map { worker in Task { try await worker.run() } }
        #expect(try await eventually(timeout: stateWaitLimit) {
            try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'delivered'").int(0, 0) == 3000
        })
        workers.forEach { $0.stop() }
        for run in runs { try await run.value }
        #expect(SimulatorHarness.mostInAnySecond(try harness.stopAndReadLog()) > Self.rate * 2)
    }
}
