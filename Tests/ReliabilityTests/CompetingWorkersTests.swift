import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import Testing

extension Reliability {
    /// Three `pgpush run` processes share one queue while the simulator answers
    /// 503s, sends GOAWAYs, refuses and drops, and one worker at a time is killed.
    ///
    /// Duplicate bound: the kill bound of `WorkerKillTests` (2 × connections ×
    /// rate per kill) plus every request that got no answer (error rows without
    /// an HTTP status), as in `SimulatorStormTests`.
    @Suite struct CompetingWorkersTests {
        static let connections = 2
        static let ratePerConnection = 40

        @Test(.enabled(if: ChildProcess.pgpushBinary != nil, WorkerProcess.missingBinary))
        func competingWorkersUnderFaultsLoseNothing() async throws {
            let binary = try #require(ChildProcess.pgpushBinary, WorkerProcess.missingBinary)
            let rounds = ReliabilityMode.pick(ci: 2, long: 10)
            let rows = ReliabilityMode.pick(ci: 1500, long: 6000)
            let faults = FaultPlanning.plan(seed: 11) {
                $0.statusMix = [.init(answer: .answer(.typical(forStatus: 503)), probability: 0.1)]
                $0.goAwayAfterStreams = 100
                $0.dropAfterStreams = 150
                $0.refuseProbability = 0.05
            }
            let harness = try SimulatorHarness.reliability(faults: faults)
            defer { harness.stop() }
            try harness.start()
            let conninfo = try TestDatabase.migrated()
            let database = try PostgresConnection(conninfo: conninfo)
            try Backlog.enqueue(database, count: rows)

            var launcher = WorkerLauncher(binary: binary, harness: harness, conninfo: conninfo, connections: Self.connections,
                                          ratePerConnection: Self.ratePerConnection, idPrefix: "competing")
            var workers = try (0..<3).map { _ in try launcher.launch() }
            var random = SystemRandomNumberGenerator()
            for _ in 0..<rounds {
                try await Task.sleep(for: .milliseconds(Int.random(in: 800...2000, using: &random)))
                let victim = Int.random(in: 0..<workers.count, using: &random)
                workers[victim].kill9()
                await workers[victim].wait()
                workers[victim] = try launcher.launch()
            }
            let settled = await Backlog.waitUntilSettled(conninfo: conninfo, timeout: .seconds(ReliabilityMode.pick(ci: 90, long: 240)))
            for worker in workers { worker.signal(SIGTERM) }
            for worker in workers { await worker.wait() }
            #expect(settled, "rows still open; last worker log:\n\(workers.last?.logTail() ?? "")")

            let claimants = try database.query("SELECT count(DISTINCT worker_id) FROM pgpush.delivery_errors").int(0, 0) ?? 0
            let noAnswer = try database.query("SELECT count(*) FROM pgpush.delivery_errors WHERE status IS NULL").int(0, 0) ?? 0
            let bound = rounds * 2 * Self.connections * Self.ratePerConnection + noAnswer
            let invariants = QueueInvariants(expectedRows: rows, duplicateBound: bound)
            let report = try invariants.expectHold(database, accepted: try harness.acceptedAPNsIDs(),
                                                   scenario: "3 competing processes, faults, kill -9 ×\(rounds), \(rows) rows")
            print("reliability[competing] workers that recorded errors: \(claimants); duplicate bound \(bound); "
                  + "simulator \(harness.simulator.report().statusCounts)")
            #expect(claimants >= 2, "the workers did not share the queue")
            #expect(report.statusCounts["delivered", default: 0] >= rows * 9 / 10)
        }
    }
}
