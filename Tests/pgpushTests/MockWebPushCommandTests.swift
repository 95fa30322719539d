import Foundation
import PGPushTestSupport
import Postgres
import Testing

/// `pgpush mock-webpush`, `pgpush doctor`, `pgpush enqueue` and `pgpush run` as a newcomer
/// runs them: a VAPID key and browser subscriptions the simulator made, the key checked, the
/// subscriptions enqueued from a file, and the browsers' push service reading each payload,
/// here one that speaks only HTTP/1.1.
@Suite(.enabled(if: ChildProcess.pgpushBinary != nil, "the pgpush binary is built by `swift build` before the tests"))
struct MockWebPushCommandTests {
    let binary = ChildProcess.pgpushBinary ?? "pgpush"

    @Test func subscriptionsEnqueuedFromAFileReachTheBrowsers() async throws {
        let conninfo = try TestDatabase.migrated()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mock-webpush-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("vapid.pem").path
        let subscriptions = directory.appendingPathComponent("subscriptions.jsonl").path
        let ca = directory.appendingPathComponent("ca.pem").path
        let report = directory.appendingPathComponent("report.json").path
        let simulator = try ChildProcess(binary, ["mock-webpush", "--port", "0", "--vapid-key-out", key, "--subscriptions", "3",
                                                  "--gone", "1", "--subscriptions-out", subscriptions, "--ca-out", ca,
                                                  "--http1-only", "--report", report])
        defer { simulator.signal(SIGTERM) }
        #expect(await simulator.waitForOutput(containing: "mock-webpush listening on", timeout: .seconds(60)), "\(simulator.output)")
        let line = simulator.output.split(separator: "\n").first { $0.contains("listening on") } ?? ""
        let origin = line.split(separator: " ").first { $0.hasPrefix("https://") }.map(String.init) ?? ""
        // The key is the app's secret: readable by its owner only.
        #expect(try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int == 0o600)
        let environment = [
            "DATABASE_URL": conninfo, "PGPUSH_VAPID_KEY_FILE": key, "PGPUSH_VAPID_SUBJECT": "mailto:ops@example.com",
            "PGPUSH_WEBPUSH_ALLOWED_ORIGINS": origin, "PGPUSH_CA_FILE": ca, "PGPUSH_WORKER_ID": "webpush-cli",
        ]

        let doctor = try ChildProcess(binary, ["doctor"], environment: environment)
        _ = await doctor.wait(timeout: .seconds(180))
        #expect(doctor.output.contains("✔ app default: VAPID key") && doctor.output.contains("applicationServerKey B"),
                "\(doctor.output)")
        #expect(!doctor.output.contains("PRIVATE KEY"), "\(doctor.output)")

        let enqueue = try ChildProcess(binary, ["enqueue", "--subscriptions-file", subscriptions, "--alert", "Hello, browser"],
                                       environment: environment)
        #expect(await enqueue.wait(timeout: .seconds(60)) == 0, "\(enqueue.output)")
        let worker = try ChildProcess(binary, ["run"], environment: environment)
        let database = try PostgresConnection(conninfo: conninfo)
        let finished = try await eventually(timeout: .seconds(180)) {
            try database.query("SELECT count(*) FROM pgpush.notifications WHERE status IN ('queued', 'sending')").int(0, 0) == 0
        }
        worker.signal(SIGTERM)
        #expect(await worker.wait(timeout: .seconds(60)) == 0, "\(worker.output)")
        #expect(finished, "\(worker.lastLines())")
        let outcomes = try database.query("""
            SELECT status || ':' || coalesce(last_reason, '') FROM pgpush.notifications WHERE service = 'webpush' ORDER BY id
            """)
        #expect((0..<outcomes.rowCount).compactMap { outcomes.string($0, 0) } == ["delivered:", "delivered:", "failed:SubscriptionGone"])
        // The endpoint is a capability: it stays out of the worker's log.
        #expect(!worker.output.contains("/push/"), "\(worker.output)")

        simulator.signal(SIGTERM)
        #expect(await simulator.wait(timeout: .seconds(30)) == 0)
        let text = try String(contentsOfFile: report, encoding: .utf8)
        #expect(text.contains("\"delivered\" : 2") && text.contains(#"{\"body\":\"Hello, browser\"}"#), "\(text)")
    }
}
