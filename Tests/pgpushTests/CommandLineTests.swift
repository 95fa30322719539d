import APNsSimulator
import Foundation
import HTTP2TLS
import PGPushTestSupport
import Postgres
import Testing

/// The `pgpush` binary as users run it: exit codes, messages, signals.
@Suite(.enabled(if: ChildProcess.pgpushBinary != nil, "the pgpush binary is built by `swift build` before the tests"))
struct CommandLineTests {
    let binary = ChildProcess.pgpushBinary ?? "pgpush"

    func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> (code: Int32?, output: String) {
        let child = try ChildProcess(binary, arguments, environment: environment)
        let code = await child.wait(timeout: .seconds(60))
        return (code, child.output)
    }

    @Test func helpAndUsageErrors() async throws {
        let help = try await run(["--help"])
        #expect(help.code == 0)
        for command in ["migrate", "run", "doctor", "prune", "mock-apns"] { #expect(help.output.contains(command)) }
        #expect(try await run(["run", "--help"]).output.contains("PGPUSH_RATE_PER_CONNECTION"))
        let unknown = try await run(["frobnicate"])
        #expect(unknown.code == 2)
        let typo = try await run(["migrate", "--databse-url", "x"])
        #expect(typo.code == 2)
        #expect(typo.output.contains("unknown flag --databse-url"))
    }

    @Test func migrateTwiceThenUpToDate() async throws {
        let conninfo = try TestDatabase.empty()
        let first = try await run(["migrate", "--sql-dir", TestDatabase.sqlDirectory], environment: ["DATABASE_URL": conninfo])
        #expect(first.code == 0)
        #expect(first.output.contains("applied"))
        let second = try await run(["migrate", "--sql-dir", TestDatabase.sqlDirectory], environment: ["DATABASE_URL": conninfo])
        #expect(second.code == 0)
        #expect(second.output.contains("up to date"))
    }

    @Test func badConfigurationNamesTheSettingAndExits2() async throws {
        let missing = try await run(["run"], environment: ["DATABASE_URL": "host=/nonexistent", "PGPUSH_TOPIC": "com.example"])
        #expect(missing.code == 2)
        #expect(missing.output.contains("PGPUSH_KEY_FILE"))
        let badKey = try await run(["run"], environment: [
            "DATABASE_URL": "host=/nonexistent", "PGPUSH_TOPIC": "com.example", "PGPUSH_TEAM_ID": "TEAM123456",
            "PGPUSH_KEY_ID": "KEY1234567", "PGPUSH_KEY_FILE": "/nonexistent/AuthKey.p8",
        ])
        #expect(badKey.code == 2)
        #expect(badKey.output.contains("/nonexistent/AuthKey.p8"))
    }

    @Test func sigtermDrainsDeregistersAndExitsZero() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-cli-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try ES256PrivateKey.generate()
        let keyFile = directory.appendingPathComponent("AuthKey.p8").path
        try key.writePKCS8(toFile: keyFile)
        var configuration = SimulatorConfiguration(authentication: .token(
            ProviderTokenKey(teamID: "TEAM123456", keyID: "KEY1234567", publicKey: try key.publicKey())))
        configuration.bundleID = "com.example.app"
        let simulator = try APNsSimulator(configuration: configuration)
        _ = try simulator.start()
        defer { simulator.stop() }

        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try database.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{\"aps\":{\"alert\":\"x\"}}')",
                           [(1...50).map { String(format: "%064x", $0) }])
        let worker = try ChildProcess(binary, ["run"], environment: [
            "DATABASE_URL": conninfo, "PGPUSH_TOPIC": "com.example.app", "PGPUSH_TEAM_ID": "TEAM123456",
            "PGPUSH_KEY_ID": "KEY1234567", "PGPUSH_KEY_FILE": keyFile, "PGPUSH_APNS_URL": simulator.baseURL ?? "",
            "PGPUSH_CA_FILE": simulator.caCertificatePath ?? "", "PGPUSH_WORKER_ID": "cli-worker",
        ])
        var delivered = 0
        for _ in 0..<1500 where delivered < 50 {
            delivered = try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'delivered'").int(0, 0) ?? 0
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(delivered == 50)
        #expect(try database.query("SELECT count(*) FROM pgpush.workers WHERE id = 'cli-worker'").int(0, 0) == 1)
        worker.signal(SIGTERM)
        let code = await worker.wait(timeout: .seconds(30))
        #expect(code == 0, "output: \(worker.output)")
        #expect(worker.output.contains("worker_stopped"))
        #expect(try database.query("SELECT count(*) FROM pgpush.workers").int(0, 0) == 0)
    }
}
