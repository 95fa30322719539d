import APNsSimulator
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PGPushTestSupport
import Postgres
import PushWorker
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
        let harness = try WorkerEndToEndTests.Harness(faults: faults)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try database.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{\"aps\":{\"alert\":\"x\"}}')",
                           [(1...10).map(WorkerEndToEndTests.token)])
        var configuration = WorkerConfiguration(databaseURL: conninfo, apps: [harness.app], workerID: "metrics-worker")
        configuration.metricsAddress = "127.0.0.1:0"
        let worker = try Worker(configuration: configuration, senders: try APNsSenderFactory.makeSenders(for: [harness.app]),
                                log: Log(sink: { _ in }))
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
        #expect(text.contains(#"pgpush_notifications_total{app="default",outcome="delivered",reason=""} 9"#))
        #expect(text.contains(#"pgpush_notifications_total{app="default",outcome="failed",reason="Unregistered"} 1"#))
        #expect(text.contains(#"pgpush_send_latency_seconds_count 10"#))
        #expect(text.contains(#"pgpush_apns_connections{app="default"}"#))
        #expect(try await get(port, "/nope").0 == 404)
        worker.stop()
        try await running.value
    }
}
