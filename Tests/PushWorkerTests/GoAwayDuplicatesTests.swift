import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import PushWorker
import Testing

/// GOAWAY every N streams under an uncapped backlog: streams at or below the
/// GOAWAY's last_stream_id are answered, so nothing may be delivered twice.
@Suite struct GoAwayDuplicatesTests {
    @Test func goAwayStormDeliversEveryRowExactlyOnce() async throws {
        // Under ThreadSanitizer a third of the rows, with GOAWAYs twice as often: as many storms
        // in a drain the sanitizer can finish beside the other suites within the limit.
        let rows = Sanitizers.scaled(6000, underThreadSanitizer: 2000)
        var faults = FaultPlan()
        faults.goAwayAfterStreams = Sanitizers.scaled(300, underThreadSanitizer: 150)
        let harness = try SimulatorHarness(faults: faults, ratePerConnection: 0, connections: 4)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: rows)
        let worker = try harness.worker(conninfo: conninfo, id: "goaway") {
            $0.apps[0].retry = WorkerEndToEndTests.fastRetries()
            $0.pollInterval = .milliseconds(20)
        }
        let running = Task { try await worker.run() }
        try await WorkerEndToEndTests.waitUntilFinished(database)
        worker.stop()
        try await running.value
        let report = harness.simulator.report()
        #expect(try WorkerEndToEndTests.counts(database, "SELECT status, count(*) FROM pgpush.notifications GROUP BY 1") == ["delivered": rows])
        #expect(report.goAwaysSent >= 10)
        #expect(report.duplicateAcceptedAPNsIDs == 0, "accepted twice: \(report.duplicateAcceptedAPNsIDs); unanswered: \(report.unansweredRequests)")
        let lost = try database.query("SELECT count(*) FROM pgpush.delivery_errors WHERE reason = 'ConnectionLost'").int(0, 0)
        #expect(lost == 0)
    }
}
