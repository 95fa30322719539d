import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import PushQueue
import PushWorker
import Testing

/// `rate_per_app` (sql/018_daily_operations.sql): workers share an app's rate through the
/// database, counted where the simulator receives requests, whoever comes and goes.
@Suite(.serialized) struct RatePerAppTests {
    static let rate = 150
    static let connections = 4

    /// The most requests received in any one-second window, from the kernel's receive
    /// times in the simulator's request log (every connection on one clock).
    static func mostInAnySecond(_ entries: [RequestLogEntry]) -> Int {
        let times = entries.compactMap(\.receivedMilliseconds).sorted()
        var most = 0
        var first = 0
        for (index, time) in times.enumerated() {
            while times[first] + 1000 <= time { first += 1 }
            most = max(most, index - first + 1)
        }
        return most
    }

    static func worker(_ harness: SimulatorHarness, conninfo: String, id: String) throws -> Worker {
        var app = harness.app(connections: connections, ratePerConnection: 100)
        app.ratePerApp = rate
        var configuration = WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: id)
        configuration.drainTimeout = .seconds(5)
        return try Worker(configuration: configuration, senders: try SenderFactory.makeSenders(for: [app]), log: Log(sink: { _ in }))
    }

    /// Two workers with four connections each (800/s of connection caps together) send at
    /// most 150 requests in any second together and at least 120/s sustained; a third worker
    /// starts and the first stops while they send, and the bound still holds.
    @Test func twoWorkersShareTheRateAndItHoldsWhileWorkersComeAndGo() async throws {
        let harness = try SimulatorHarness(logRequests: true)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 6000)
        let delivered = "SELECT count(*) FROM pgpush.notifications WHERE status = 'delivered'"

        let first = try Self.worker(harness, conninfo: conninfo, id: "rate-1")
        let second = try Self.worker(harness, conninfo: conninfo, id: "rate-2")
        let runs = [first, second].map { worker in Task { try await worker.run() } }
        defer { first.stop(); second.stop() }
        // Both hold a share once the second's is granted: then measure a steady stretch.
        #expect(try await eventually(timeout: .seconds(60)) {
            try database.query("SELECT count(*) FROM pgpush.rate_shares WHERE share > 0").int(0, 0) == 2
        })
        let steadyFrom = try database.query(delivered).int(0, 0) ?? 0
        let steadyStart = ContinuousClock.now
        try await Task.sleep(for: .seconds(8))
        let steadyRows = (try database.query(delivered).int(0, 0) ?? 0) - steadyFrom
        let elapsed = ContinuousClock.now - steadyStart
        let steadyRate = Double(steadyRows) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        #expect(steadyRate >= 120, "\(steadyRate)/s sustained")

        // A third worker joins; the first leaves.
        let third = try Self.worker(harness, conninfo: conninfo, id: "rate-3")
        let thirdRun = Task { try await third.run() }
        defer { third.stop() }
        #expect(try await eventually(timeout: .seconds(60)) {
            try database.query("SELECT count(*) FROM pgpush.rate_shares WHERE share > 0").int(0, 0) == 3
        })
        try await Task.sleep(for: .seconds(2))
        first.stop()
        try await runs[0].value
        try await Task.sleep(for: .seconds(4))
        second.stop()
        third.stop()
        try await runs[1].value
        try await thirdRun.value

        let entries = try harness.stopAndReadLog()
        let most = Self.mostInAnySecond(entries)
        print("rate_per_app \(Self.rate): \(entries.count) requests, at most \(most) in any second, \(steadyRate)/s sustained by two workers")
        #expect(entries.count > 1500)
        #expect(most <= Self.rate, "\(most) in one second")
        // Given back: nothing holds a share after the workers stopped.
        #expect(try database.query("SELECT count(*) FROM pgpush.rate_shares WHERE share > 0").int(0, 0) == 0)
    }

    /// Without rate_per_app the same two workers send far more than 150/s (the test above
    /// would fail): the bound comes from the shared rate, not from the connections.
    @Test func withoutARatePerAppTheWorkersSendFasterThanThat() async throws {
        let harness = try SimulatorHarness(logRequests: true)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 3000)
        let workers = try ["free-1", "free-2"].map { id in
            var app = harness.app(connections: Self.connections, ratePerConnection: 100)
            app.ratePerApp = 0
            let configuration = WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: id)
            return try Worker(configuration: configuration, senders: try SenderFactory.makeSenders(for: [app]), log: Log(sink: { _ in }))
        }
        let runs = workers.map { worker in Task { try await worker.run() } }
        #expect(try await eventually(timeout: .seconds(120)) {
            try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'delivered'").int(0, 0) == 3000
        })
        workers.forEach { $0.stop() }
        for run in runs { try await run.value }
        #expect(Self.mostInAnySecond(try harness.stopAndReadLog()) > Self.rate * 2)
    }
}
