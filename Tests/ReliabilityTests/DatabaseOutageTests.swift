import EmbeddedPostgres
import Foundation
import PGPushTestSupport
import Postgres
import PushQueue
import Testing

extension Reliability {
    /// PostgreSQL goes away under a running worker: a fast restart (every
    /// session terminated) and a longer outage (server stopped for seconds).
    /// The cluster is this test's own: other suites share the per-process one.
    ///
    /// Duplicate bound: a send whose outcome could not be written before its
    /// lease was taken back is sent again, so per outage at most the rows in
    /// flight plus the unwritten outcomes: 2 × connections × rate; and every
    /// request that got no answer may have been processed.
    @Suite struct DatabaseOutageTests {
        static let connections = 2
        static let ratePerConnection = 100

        @Test func restartAndOutageLoseNothing() async throws {
            let outages = ReliabilityMode.pick(ci: 1, long: 5)
            let outageLength = Duration.seconds(3)
            let rows = ReliabilityMode.pick(ci: 2500, long: 12000)
            let cluster = try EmbeddedPostgres.start()
            defer { cluster.stop() }
            let conninfo = try cluster.createDatabase("outage")
            try TestDatabase.migrate(conninfo)
            try Backlog.enqueue(PostgresConnection(conninfo: conninfo), count: rows)

            let harness = try SimulatorHarness.reliability(faults: FaultPlanning.none)
            defer { harness.stop() }
            try harness.start()
            let worker = try InProcessWorker.start(
                conninfo: conninfo, app: harness.app(connections: Self.connections, ratePerConnection: Self.ratePerConnection),
                id: "outage-worker", lease: .seconds(5))

            var events: [String] = []
            var milestone = 200
            #expect(await Backlog.waitUntilDelivered(conninfo: conninfo, atLeast: milestone, timeout: .seconds(30)))
            try cluster.restartServer()
            events.append("fast restart at ≥\(milestone) delivered")
            for outage in 1...outages {
                milestone += 300
                #expect(await Backlog.waitUntilDelivered(conninfo: conninfo, atLeast: milestone, timeout: .seconds(30)),
                        "no progress after the database came back (outage \(outage))")
                try cluster.stopServer()
                try await Task.sleep(for: outageLength)
                try cluster.startServer()
                events.append("\(outageLength) outage at ≥\(milestone) delivered")
            }
            let settled = await Backlog.waitUntilSettled(conninfo: conninfo, timeout: .seconds(ReliabilityMode.pick(ci: 60, long: 180)))
            try await worker.stop()
            #expect(settled)

            let database = try PostgresConnection(conninfo: conninfo)
            let delivered = try Backlog.count(database, "status = 'delivered'")
            #expect(delivered < rows || !events.isEmpty)
            let noAnswer = try database.query("SELECT count(*) FROM pgpush.delivery_errors WHERE status IS NULL").int(0, 0) ?? 0
            let bound = (1 + outages) * 2 * Self.connections * Self.ratePerConnection + noAnswer
            let invariants = QueueInvariants(expectedRows: rows, duplicateBound: bound)
            try invariants.expectHold(database, accepted: try harness.acceptedAPNsIDs(),
                                      scenario: "PostgreSQL \(events.joined(separator: ", ")), \(rows) rows")
            #expect(try Backlog.count(database, "status = 'delivered'") == rows)
        }
    }
}
