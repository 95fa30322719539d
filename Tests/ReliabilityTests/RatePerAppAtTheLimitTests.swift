import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import PushWorker
import Testing

extension Reliability {
    /// `rate_per_app` at its limit, with the reliability suite alone on the machine: two
    /// workers of four connections each (800/s of connection caps) under `rate_per_app` 150
    /// send at most 150 requests in any one second together where the simulator receives
    /// them, and at least 120/s sustained with a backlog; then a third worker starts and the
    /// first stops while they send, and the bound still holds.
    @Suite struct RatePerAppAtTheLimitTests {
        static let rate = 150

        @Test func twoWorkersHoldTheRateTogetherAndKeepCloseToIt() async throws {
            let harness = try SimulatorHarness(logRequests: true)
            defer { harness.stop() }
            let conninfo = try TestDatabase.migrated()
            let database = try PostgresConnection(conninfo: conninfo)
            try TestDatabase.enqueueAlerts(database, count: 8000)
            func worker(_ id: String) throws -> Worker {
                var app = harness.app(connections: 4, ratePerConnection: 100)
                app.ratePerApp = Self.rate
                var configuration = WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: id)
                configuration.drainTimeout = .seconds(5)
                return try Worker(configuration: configuration, senders: try SenderFactory.makeSenders(for: [app]),
                                  log: Log(sink: { _ in }))
            }
            func sharesHeld(_ count: Int) async throws -> Bool {
                try await eventually(timeout: .seconds(120)) {
                    try database.query("SELECT count(*) FROM pgpush.rate_shares WHERE share > 0 AND expires_at > now()")
                        .int(0, 0) == count
                }
            }
            let first = try worker("limit-1"), second = try worker("limit-2")
            let runs = [first, second].map { worker in Task { try await worker.run() } }
            defer { first.stop(); second.stop() }
            #expect(try await sharesHeld(2))
            let steadyFrom = Date().timeIntervalSince1970 * 1000 + 1000
            try await Task.sleep(for: .seconds(11))
            let third = try worker("limit-3")
            let thirdRun = Task { try await third.run() }
            defer { third.stop() }
            #expect(try await sharesHeld(3))
            try await Task.sleep(for: .seconds(2))
            first.stop()
            try await runs[0].value
            try await Task.sleep(for: .seconds(5))
            second.stop()
            third.stop()
            try await runs[1].value
            try await thirdRun.value

            let entries = try harness.stopAndReadLog()
            let most = SimulatorHarness.mostInAnySecond(entries)
            let sustained = SimulatorHarness.rate(entries, from: steadyFrom, seconds: 10)
            print("reliability[rate_per_app \(Self.rate)] \(entries.count) requests, at most \(most) in any second, "
                  + "\(sustained)/s sustained by two workers over 10 s")
            #expect(most <= Self.rate, "\(most) in one second")
            #expect(sustained >= 120, "\(sustained)/s sustained")
            #expect(try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'failed'").int(0, 0) == 0)
        }
    }
}
