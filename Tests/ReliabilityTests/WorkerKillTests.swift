import Foundation
import PGPushTestSupport
import Postgres
import Testing

extension Reliability {
    /// `kill -9` of `pgpush run` processes at random moments during a backlog.
    ///
    /// Duplicate bound: a killed worker can only have sent twice what it had
    /// claimed and not yet recorded: its claim window (connections × rate × 1 s
    /// rows in flight) plus the outcomes its writer had not flushed (another
    /// window at most). So duplicates ≤ kills × 2 × connections × rate.
    @Suite struct WorkerKillTests {
        static let connections = 2
        static let ratePerConnection = 50
        static var window: Int { connections * ratePerConnection }

        @Test(.enabled(if: ChildProcess.pgpushBinary != nil, WorkerProcess.missingBinary))
        func killedWorkersLoseNothing() async throws {
            let binary = try #require(ChildProcess.pgpushBinary, WorkerProcess.missingBinary)
            let rounds = ReliabilityMode.pick(ci: 3, long: 20)
            let rows = ReliabilityMode.pick(ci: 1500, long: 8000)
            let workerCount = 2
            let harness = try SimulatorHarness.reliability(faults: FaultPlanning.none)
            defer { harness.stop() }
            try harness.start()
            let conninfo = try TestDatabase.migrated()
            let database = try PostgresConnection(conninfo: conninfo)
            try Backlog.enqueue(database, count: rows)

            var launcher = WorkerLauncher(binary: binary, harness: harness, conninfo: conninfo, connections: Self.connections,
                                          ratePerConnection: Self.ratePerConnection, idPrefix: "killable")
            var workers = try (0..<workerCount).map { _ in try launcher.launch() }
            var random = SystemRandomNumberGenerator()
            var kills = 0
            var deliveredAtKill: [Int] = []
            for _ in 0..<rounds {
                // A random moment while the backlog is being worked through.
                try await Task.sleep(for: .milliseconds(Int.random(in: 400...1500, using: &random)))
                let victim = Int.random(in: 0..<workers.count, using: &random)
                workers[victim].kill9()
                await workers[victim].wait()
                kills += 1
                deliveredAtKill.append(try Backlog.count(database, "status = 'delivered'"))
                workers[victim] = try launcher.launch()
            }
            let settled = await Backlog.waitUntilSettled(conninfo: conninfo, timeout: .seconds(ReliabilityMode.pick(ci: 60, long: 180)))
            for worker in workers { worker.signal(SIGTERM) }
            for worker in workers { await worker.wait() }
            #expect(settled, "rows still open; last worker log:\n\(workers.last?.logTail() ?? "")")
            #expect(deliveredAtKill.last.map { $0 < rows } ?? false,
                    "the backlog ran out before the last kill (delivered at each kill: \(deliveredAtKill)): raise the row count")

            let bound = kills * 2 * Self.window
            let invariants = QueueInvariants(expectedRows: rows, duplicateBound: bound)
            let report = try invariants.expectHold(database, accepted: try harness.acceptedAPNsIDs(),
                                                   scenario: "kill -9 ×\(kills), \(workerCount) processes, \(rows) rows")
            print("reliability[kill -9] delivered at each kill: \(deliveredAtKill); duplicate bound \(bound)")
            #expect(report.statusCounts["delivered", default: 0] + report.leaseExpired == rows)
        }
    }
}
