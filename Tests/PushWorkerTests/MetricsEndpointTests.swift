import APNsSimulator
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PGPushTestSupport
import Postgres
@testable import PushQueue
@testable import PushWorker
import PushTransport
import Testing

@Suite struct MetricsEndpointTests {
    func get(_ port: Int, _ path: String) async throws -> (Int, String) {
        let url = try #require(URL(string: "http://127.0.0.1:\(port)\(path)"))
        let (data, response) = try await URLSession.shared.data(from: url)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    @Test func prometheusTextAndHealthEndpoints() async throws {
        var faults = FaultPlan()
        faults.unregisteredTokens = [WorkerEndToEndTests.token(2)]
        let harness = try SimulatorHarness(faults: faults)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 10)
        let worker = try harness.worker(conninfo: conninfo, id: "metrics-worker") {
            $0.metricsAddress = "127.0.0.1:0"
        }
        let port = try #require(worker.metricsPort)
        let running = Task { try await worker.run() }
        try await WorkerEndToEndTests.waitUntilFinished(database)
        var ready = 0
        for _ in 0..<100 where ready != 200 {
            ready = try await get(port, "/readyz").0
            if ready != 200 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(ready == 200)
        #expect(try await get(port, "/healthz").0 == 200)
        let (status, text) = try await get(port, "/metrics")
        #expect(status == 200)
        // deploy/local/test.sh hands this scrape to `promtool check metrics`: the real
        // output of a worker that delivered, failed and measured, not a sample.
        if let dump = ProcessInfo.processInfo.environment["PGPUSH_METRICS_DUMP"], !dump.isEmpty {
            try text.write(toFile: dump, atomically: true, encoding: .utf8)
        }
        #expect(text.contains(#"pgpush_notifications_total{app="default",service="apns",outcome="delivered",reason=""} 9"#))
        #expect(text.contains(#"pgpush_notifications_total{app="default",service="apns",outcome="failed",reason="Unregistered"} 1"#))
        #expect(text.contains(#"pgpush_send_latency_seconds_count 10"#))
        #expect(text.contains(#"pgpush_apns_connections{app="default",service="apns"}"#))
        #expect(text.contains(#"pgpush_app_healthy{app="default",service="apns",topic=""} 1"#))
        #expect(text.contains(#"pgpush_queue_oldest_due_seconds{app="default"}"#))
        #expect(try await get(port, "/nope").0 == 404)
        worker.stop()
        try await running.value
    }

    @Test func connectionFailuresAreCountedPerAppAndCauseFromZero() {
        let metrics = WorkerMetrics(apps: ["a"])
        var statistics = SenderStatistics()
        statistics.connectionFailuresByCause = [.tlsCertificate: 3, .dns: 1]
        let text = metrics.render(senders: [Route(app: "a", service: .apns): statistics])
        #expect(text.contains("# TYPE pgpush_apns_connection_failures_total counter\n"))
        #expect(text.contains(#"pgpush_apns_connection_failures_total{app="a",service="apns",cause="tls_certificate"} 3"#))
        #expect(text.contains(#"pgpush_apns_connection_failures_total{app="a",service="apns",cause="dns"} 1"#))
        for cause in ["alpn", "io_error", "protocol_error", "tcp_connect", "timeout", "tls_handshake"] {
            #expect(text.contains("pgpush_apns_connection_failures_total{app=\"a\",service=\"apns\",cause=\"\(cause)\"} 0\n"))
        }
    }

    /// Before the queue was ever read its gauges are absent, not 0 (0 said "empty" under a
    /// statement_timeout that failed every read, with 19,999 rows due); after a read, a
    /// served app with no row reads 0, and the figures' age is shown.
    @Test func queueGaugesAreAbsentUntilReadThenServedAppsReadZero() {
        let metrics = WorkerMetrics(apps: ["b", "a"])
        let text = metrics.render()
        #expect(!text.contains("pgpush_queue_due{"), "\(text)")
        #expect(!text.contains("pgpush_queue_sending{") && !text.contains("pgpush_queue_oldest_due_seconds{"))
        #expect(!text.contains("\npgpush_unserved_due ") && !text.contains("\npgpush_queue_depth_age_seconds "))
        for app in ["a", "b"] {
            #expect(text.contains("pgpush_app_healthy{app=\"\(app)\",service=\"apns\",topic=\"\"} 1\n"))
        }
        metrics.recordQueueDepth([:], unserved: (due: 0, apps: 0))
        let read = metrics.render()
        for app in ["a", "b"] {
            #expect(read.contains("pgpush_queue_due{app=\"\(app)\"} 0\n"))
            #expect(read.contains("pgpush_queue_sending{app=\"\(app)\"} 0\n"))
            #expect(read.contains("pgpush_queue_oldest_due_seconds{app=\"\(app)\"} 0.0\n"))
        }
        #expect(read.contains("\npgpush_queue_depth_age_seconds "))
        metrics.recordHealth(app: "a", topic: nil, healthy: false)
        metrics.recordExpiredAtClaim(app: "b", count: 3)
        // Apps nobody here serves are named by whoever inserted the rows: one "other" series.
        metrics.recordQueueDepth([
            "a": QueueDepth(due: 5, sending: 1, oldestDueSeconds: 2),
            "x": QueueDepth(due: 7, sending: 0, oldestDueSeconds: 30),
            "y": QueueDepth(due: 1, sending: 2, oldestDueSeconds: 90),
        ], unserved: (due: 8, apps: 2))
        let after = metrics.render()
        #expect(after.contains(#"pgpush_queue_due{app="a"} 5"#))
        #expect(after.contains(#"pgpush_queue_due{app="b"} 0"#))
        #expect(after.contains(#"pgpush_queue_due{app="other"} 8"#))
        #expect(after.contains(#"pgpush_queue_sending{app="other"} 2"#))
        #expect(after.contains(#"pgpush_queue_oldest_due_seconds{app="other"} 90.0"#))
        #expect(!after.contains(#"app="x""#) && !after.contains(#"app="y""#))
        #expect(after.contains(#"pgpush_app_healthy{app="a",service="apns",topic=""} 0"#))
        #expect(after.contains("pgpush_unserved_due 8\n") && after.contains("pgpush_unserved_apps 2\n"))
        #expect(after.contains(#"pgpush_notifications_total{app="b",service="apns",outcome="expired",reason=""} 3"#))
    }

    @Test func reasonLabelsAreOnlyKnownReasons() {
        let labels = WorkerMetrics(apps: ["a"], reasons: ["Unregistered", "InvalidPayload"])
        #expect(labels.reasonLabel(nil) == "")
        #expect(labels.reasonLabel("Unregistered") == "Unregistered")
        #expect(labels.reasonLabel("InvalidPayload") == "InvalidPayload")
        #expect(labels.reasonLabel("ConnectionLost") == "ConnectionLost")
        #expect(labels.reasonLabel("KnownInvalidToken") == "KnownInvalidToken")
        #expect(labels.reasonLabel("HTTP502") == "HTTP502")
        #expect(labels.reasonLabel("HTTP5020") == "other")
        #expect(labels.reasonLabel("NotAnAPNsReason") == "other")
        #expect(labels.reasonLabel("Unregistered\"} 1\nfake 2") == "other")
        let metrics = WorkerMetrics(apps: ["a"])
        metrics.recordOutcome(app: "a", Outcome(id: 1, claimCount: 1, disposition: .failed, httpStatus: 400, reason: "tenant-made text"))
        #expect(metrics.render().contains(#"pgpush_notifications_total{app="a",service="apns",outcome="failed",reason="other"} 1"#))
    }

    @Test func topicHealthSeriesAreCappedPerApp() {
        let metrics = WorkerMetrics(apps: ["a"])
        let topics = (0..<(WorkerMetrics.topicsPerApp + 4)).map { "com.example.t\($0)" }
        for topic in topics { metrics.recordHealth(app: "a", topic: topic, healthy: false) }
        var text = metrics.render()
        let series = text.split(separator: "\n").filter { $0.hasPrefix("pgpush_app_healthy{app=\"a\",service=\"apns\",topic=\"com.") }
        #expect(series.count == WorkerMetrics.topicsPerApp)
        #expect(text.contains(#"pgpush_app_healthy{app="a",service="apns",topic="other"} 0"#))
        // "other" reads healthy only once every folded topic resumed.
        for topic in topics.suffix(3) { metrics.recordHealth(app: "a", topic: topic, healthy: true) }
        #expect(metrics.render().contains(#"pgpush_app_healthy{app="a",service="apns",topic="other"} 0"#))
        metrics.recordHealth(app: "a", topic: topics[WorkerMetrics.topicsPerApp], healthy: true)
        text = metrics.render()
        #expect(text.contains(#"pgpush_app_healthy{app="a",service="apns",topic="other"} 1"#))
        #expect(text.contains(#"pgpush_app_healthy{app="a",service="apns",topic="com.example.t0"} 0"#))
    }

    /// Cancelled rows never reach a worker's outcomes: the heartbeat counts them, and
    /// expired ones, from the database, for the served apps only.
    @Test func rowsFinishedInTheDatabaseAreCounted() throws {
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        let queue = NotificationQueue(connection: database, workerID: "metrics-worker")
        #expect(try queue.finishedRows(apps: ["default"], since: nil).counts.isEmpty)
        let ids = try database.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{}')",
                                     [(1...3).map(WorkerEndToEndTests.token)])
        #expect(ids.rowCount == 3)
        let cancelled = try database.query("SELECT pgpush.cancel(array(SELECT id FROM pgpush.notifications ORDER BY id LIMIT 2))")
        #expect(cancelled.rowCount == 2)
        try database.query("""
            UPDATE pgpush.notifications SET status = 'expired', finished_at = now()
             WHERE status = 'queued'
            """)
        // Past the lag that lets finishing transactions commit before they are counted.
        try database.query("UPDATE pgpush.notifications SET finished_at = finished_at - interval '1 minute'")
        let finished = try queue.finishedRows(apps: ["default", "other"], since: "-infinity")
        #expect(finished.counts == ["default": ["cancelled": 2, "expired": 1]])
        #expect(try queue.finishedRows(apps: ["other"], since: "-infinity").counts.isEmpty)
        #expect(try queue.finishedRows(apps: ["default"], since: finished.upTo).counts.isEmpty)

        let metrics = WorkerMetrics(apps: ["default", "idle"])
        metrics.recordFinishedInDatabase(finished.counts)
        metrics.recordFinishedInDatabase(finished.counts)
        let text = metrics.render()
        #expect(text.contains(#"pgpush_queue_finished_total{app="default",status="cancelled"} 4"#))
        #expect(text.contains(#"pgpush_queue_finished_total{app="default",status="expired"} 2"#))
        #expect(text.contains(#"pgpush_queue_finished_total{app="idle",status="cancelled"} 0"#))
    }
}
