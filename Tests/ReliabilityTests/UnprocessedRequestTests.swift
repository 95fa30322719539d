import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import Testing

extension Reliability {
    /// Pinned down with scripted answers (the bug the storms first found): requests APNs
    /// certainly never processed (REFUSED_STREAM) must not spend attempts
    /// and must never end a row `failed` without a recorded error.
    @Suite struct UnprocessedRequestTests {
        @Test func refusedStreamsSpendNoAttemptsAndFailuresAreRecorded() async throws {
            let refusedThrice = Backlog.token(1), refusedForever = Backlog.token(2)
            let faults = FaultPlanning.plan {
                $0.scripts = [refusedThrice: Array(repeating: .refuse, count: 3),
                              refusedForever: Array(repeating: .refuse, count: 60)]
            }
            let harness = try SimulatorHarness.reliability(faults: faults)
            defer { harness.stop() }
            try harness.start()
            let conninfo = try TestDatabase.migrated()
            let database = try PostgresConnection(conninfo: conninfo)
            try Backlog.enqueue(database, count: 2)
            let worker = try InProcessWorker.start(
                conninfo: conninfo, app: harness.app(connections: 2, ratePerConnection: 100), id: "scripted-worker")
            let settled = await Backlog.waitUntilSettled(conninfo: conninfo, timeout: .seconds(60))
            try await worker.stop()
            #expect(settled)

            let rows = try database.query("""
                SELECT device_token, status, attempts, last_reason,
                       (SELECT count(*) FROM pgpush.delivery_errors e WHERE e.notification_id = n.id)
                  FROM pgpush.notifications n ORDER BY device_token
                """)
            try #require(rows.rowCount == 2)
            // Three refusals: the client resends twice, the worker once more; none was processed.
            #expect(rows.string(0, 1) == "delivered")
            #expect(rows.int(0, 2) == 1, "attempts spent on refused streams: \(rows.int(0, 2) ?? -1)")
            // Refused on every try: whatever the worker decides, a failure must carry its error rows.
            let failedForever = rows.string(1, 1) == "failed"
            let errorRows = rows.int(1, 4) ?? 0
            print("reliability[refused forever] status \(rows.string(1, 1) ?? "?"), attempts \(rows.int(1, 2) ?? -1), "
                  + "reason \(rows.string(1, 3) ?? "none"), error rows \(errorRows); "
                  + "refused-thrice row: attempts \(rows.int(0, 2) ?? -1)")
            #expect(!failedForever || errorRows > 0, "failed after \(rows.int(1, 2) ?? -1) attempts with no error row")
            let invariants = QueueInvariants(expectedRows: 2, duplicateBound: 0)
            try invariants.expectHold(database, accepted: try harness.acceptedAPNsIDs(), scenario: "scripted refusals")
        }
    }
}
