import Foundation
import PGPushTestSupport
import Postgres
import Testing

/// `pgpush mock-fcm`, `pgpush doctor` and `pgpush run` as an operator runs them: a service
/// account file the simulator wrote, FCM credentials checked by a token exchange and a
/// `validate_only` send, then an FCM row delivered by the worker.
@Suite(.enabled(if: ChildProcess.pgpushBinary != nil, "the pgpush binary is built by `swift build` before the tests"))
struct MockFCMCommandTests {
    let binary = ChildProcess.pgpushBinary ?? "pgpush"

    struct Running {
        let simulator: ChildProcess
        let environment: [String: String]
        let directory: URL
        let report: String
    }

    func start(_ extra: [String] = [], conninfo: String) async throws -> Running {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mock-fcm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let credentials = directory.appendingPathComponent("service-account.json").path
        let ca = directory.appendingPathComponent("ca.pem").path
        let report = directory.appendingPathComponent("report.json").path
        let simulator = try ChildProcess(binary, ["mock-fcm", "--port", "0", "--credentials-out", credentials, "--ca-out", ca,
                                                  "--project", "demo-project", "--report", report] + extra)
        #expect(await simulator.waitForOutput(containing: "mock-fcm listening on", timeout: .seconds(60)), "\(simulator.output)")
        let line = simulator.output.split(separator: "\n").first { $0.contains("listening on") } ?? ""
        let url = line.split(separator: " ").first { $0.hasPrefix("https://") }.map(String.init) ?? ""
        return Running(simulator: simulator, environment: [
            "DATABASE_URL": conninfo, "PGPUSH_FCM_CREDENTIALS_FILE": credentials, "PGPUSH_FCM_URL": url, "PGPUSH_CA_FILE": ca,
            "PGPUSH_WORKER_ID": "fcm-cli",
        ], directory: directory, report: report)
    }

    @Test func doctorProvesFCMCredentialsAndRunDeliversAnFCMRow() async throws {
        let conninfo = try TestDatabase.migrated()
        let running = try await start(conninfo: conninfo)
        defer {
            running.simulator.signal(SIGTERM)
            try? FileManager.default.removeItem(at: running.directory)
        }
        // The file the simulator wrote is readable by its owner only, as a key should be.
        let mode = try FileManager.default.attributesOfItem(atPath: running.environment["PGPUSH_FCM_CREDENTIALS_FILE"] ?? "")[.posixPermissions]
        #expect(mode as? Int == 0o600)

        let doctor = try ChildProcess(binary, ["doctor"], environment: running.environment)
        #expect(await doctor.wait(timeout: .seconds(180)) == 0, "\(doctor.output)")
        #expect(doctor.output.contains("✔ app default: FCM credentials: service account pgpush@demo-project.iam.gserviceaccount.com"),
                "\(doctor.output)")
        #expect(doctor.output.contains("✔ app default: FCM credentials: FCM issued an access token and took a validate_only message"),
                "\(doctor.output)")
        #expect(!doctor.output.contains("ya29.") && !doctor.output.contains("PRIVATE KEY"), "\(doctor.output)")

        let database = try PostgresConnection(conninfo: conninfo)
        let id = try database.query("""
            INSERT INTO pgpush.notifications (service, device_token, payload)
            VALUES ('fcm', 'cli-token:APA91b', '{"notification":{"title":"Hi"}}') RETURNING id
            """).int64(0, 0)
        let worker = try ChildProcess(binary, ["run"], environment: running.environment)
        let delivered = try await eventually(timeout: .seconds(180)) {
            try database.query("SELECT status FROM pgpush.notifications WHERE id = $1", [id]).string(0, 0) == "delivered"
        }
        worker.signal(SIGTERM)
        #expect(await worker.wait(timeout: .seconds(60)) == 0, "\(worker.output)")
        #expect(delivered, "\(worker.lastLines())")
        let messageID = try database.query("SELECT message_id FROM pgpush.notifications WHERE id = $1", [id]).string(0, 0)
        #expect(messageID?.hasPrefix("projects/demo-project/messages/") == true)
        #expect(!worker.output.contains("ya29."), "an access token in the worker's log")

        running.simulator.signal(SIGTERM)
        #expect(await running.simulator.wait(timeout: .seconds(30)) == 0)
        let report = try String(contentsOfFile: running.report, encoding: .utf8)
        #expect(report.contains("\"delivered\" : 1"), "\(report)")
    }

    @Test func doctorNamesWhatToCheckWhenFCMRefusesTheProject() async throws {
        let conninfo = try TestDatabase.migrated()
        let running = try await start(["--permission-denied"], conninfo: conninfo)
        defer {
            running.simulator.signal(SIGTERM)
            try? FileManager.default.removeItem(at: running.directory)
        }
        let doctor = try ChildProcess(binary, ["doctor"], environment: running.environment)
        #expect(await doctor.wait(timeout: .seconds(180)) == 1, "\(doctor.output)")
        #expect(doctor.output.contains("✘ app default: FCM credentials: PERMISSION_DENIED"), "\(doctor.output)")
        #expect(doctor.output.contains("API is enabled"), "\(doctor.output)")
    }
}
