import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import Testing

extension Reliability {
    /// One in-process worker against a simulator that misbehaves in one way.
    ///
    /// Duplicate bound: no worker dies here, so a notification is accepted twice
    /// only if an earlier request of it was processed but its answer never
    /// reached the worker; each such request is an error row with no HTTP status
    /// (DeadlineExceeded, ConnectionLost…). Bound: the number of those rows.
    /// Refused streams and streams above a GOAWAY's last id were certainly not
    /// processed, so they add nothing.
    @Suite struct SimulatorStormTests {
        struct Storm: Sendable, CustomTestStringConvertible {
            var name: String
            var faults: FaultPlan
            /// The client's request deadline; the factory's 10 s when nil.
            var requestTimeout: Duration?
            /// Start the worker first and the simulator this much later.
            var simulatorStartsAfter: Duration?
            /// Rows that must end `delivered`: faults beyond the retry budget
            /// (three retries after no answer) rightly end rows as `failed`.
            var minimumDelivered = 0.9
            /// A worker bug this storm shows; those rules are a known issue until it is fixed.
            var knownBug: QueueInvariants.KnownBug?
            /// Rows in long mode (CI mode: 400).
            var longRows = 3000
            var testDescription: String { name }
        }

        static let storms: [Storm] = [
            Storm(name: "GOAWAY every 40 streams", faults: FaultPlanning.plan { $0.goAwayAfterStreams = 40 }),
            // Each drop loses the whole burst in flight on that connection (about 45 requests),
            // so rows meeting four drops in a row fail with ConnectionLost, as the README's answer table says.
            Storm(name: "connection dropped every 30 streams", faults: FaultPlanning.plan { $0.dropAfterStreams = 30 },
                  minimumDelivered: 0.3),
            Storm(name: "503 storm (30% of answers)", faults: FaultPlanning.plan {
                $0.statusMix = [.init(answer: .answer(.typical(forStatus: 503)), probability: 0.3)]
            }),
            Storm(name: "429 storm (50%)", faults: FaultPlanning.plan {
                $0.statusMix = [.init(answer: .answer(.typical(forStatus: 429)), probability: 0.5)]
            }, longRows: 800),   // sustained 429s halve each connection's rate every 10 s, down to 1/s (by design)
            Storm(name: "answers slower than the 1 s deadline (~40%)", faults: FaultPlanning.plan {
                $0.latencyMilliseconds = 700
                $0.latencyJitterMilliseconds = 700
            }, requestTimeout: .seconds(1), minimumDelivered: 0.8),
            Storm(name: "refused streams (15% and every 7th)", faults: FaultPlanning.plan {
                $0.refuseProbability = 0.15
                $0.refuseEveryNth = 7
            }),
            Storm(name: "simulator down for 3 s at start-up", faults: FaultPlanning.none, simulatorStartsAfter: .seconds(3)),
        ]

        static let connections = 2
        static let ratePerConnection = 100

        @Test(arguments: storms) func stormLosesNothing(_ storm: Storm) async throws {
            let rows = ReliabilityMode.pick(ci: 400, long: storm.longRows)
            let harness = try SimulatorHarness.reliability(faults: storm.faults)
            defer { harness.stop() }
            if storm.simulatorStartsAfter == nil { try harness.start() }
            let conninfo = try TestDatabase.migrated()
            let database = try PostgresConnection(conninfo: conninfo)
            try Backlog.enqueue(database, count: rows)

            let sender = try storm.requestTimeout.map {
                try harness.sender(connections: Self.connections, ratePerConnection: Self.ratePerConnection, requestTimeout: $0)
            }
            let worker = try InProcessWorker.start(
                conninfo: conninfo, app: harness.app(connections: Self.connections, ratePerConnection: Self.ratePerConnection),
                id: "storm-worker", lease: .seconds(10), sender: sender)
            if let delay = storm.simulatorStartsAfter {
                try await Task.sleep(for: delay)
                try harness.start()
            }
            let settled = await Backlog.waitUntilSettled(conninfo: conninfo, timeout: .seconds(ReliabilityMode.pick(ci: 60, long: 240)))
            try await worker.stop()
            #expect(settled, "\(storm.name): rows still open")

            let noAnswer = try database.query("SELECT count(*) FROM pgpush.delivery_errors WHERE status IS NULL").int(0, 0) ?? 0
            let invariants = QueueInvariants(expectedRows: rows, duplicateBound: noAnswer)
            let accepted = try harness.acceptedAPNsIDs()
            let report = try invariants.expectHold(database, accepted: accepted, scenario: storm.name, knownBug: storm.knownBug)
            let simulator = harness.simulator.report()
            print("reliability[\(storm.name)] simulator: requests \(simulator.totalRequests), statuses \(simulator.statusCounts), "
                  + "refused \(simulator.refusedStreams), unanswered \(simulator.unansweredRequests), "
                  + "GOAWAYs \(simulator.goAwaysSent), drops \(simulator.connectionsDropped), no-answer error rows \(noAnswer)")
            // Each storm's faults are within the retry budget for almost every row.
            #expect(Double(report.statusCounts["delivered", default: 0]) >= Double(rows) * storm.minimumDelivered,
                    "\(storm.name): \(report)")
        }
    }
}
