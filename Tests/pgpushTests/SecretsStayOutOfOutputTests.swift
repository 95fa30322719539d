import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import Testing

/// What operators see — `run` logs, `status`, `status --json`, `doctor`, error
/// messages — never carries key material, a JWT, a p12 password or the database password.
@Suite(.enabled(if: ChildProcess.pgpushBinary != nil, "the pgpush binary is built by `swift build` before the tests"))
struct SecretsStayOutOfOutputTests {
    let binary = ChildProcess.pgpushBinary ?? "pgpush"
    static let databasePassword = "db-Pa55word-never-shown"
    static let p12Password = "p12-Pa55word-never-shown"

    func run(_ arguments: [String], environment: [String: String]) async throws -> String {
        let child = try ChildProcess(binary, arguments, environment: environment)
        let code = await child.wait(timeout: .seconds(180))
        #expect(code != nil, "pgpush \(arguments) did not exit")
        return child.output
    }

    /// Fails with the offending secret's name when `output` holds any of `secrets`.
    func expectNoSecret(in output: String, _ secrets: [String: String], from source: String) {
        for (name, secret) in secrets {
            #expect(!output.contains(secret), "\(source) printed the \(name)")
        }
        #expect(!output.contains("eyJ"), "\(source) printed a JWT (base64url of {\"alg\"…)")
        #expect(!output.contains("PRIVATE KEY"), "\(source) printed a PEM key")
        #expect(!output.lowercased().contains("bearer"), "\(source) printed an authorization header")
    }

    @Test func runStatusAndDoctorAfterCredentialErrors() async throws {
        // libpq ignores a password that the (trust) test cluster does not ask for, so
        // every command below carries one that must never be echoed back.
        let conninfo = try TestDatabase.migrated() + " password=\(Self.databasePassword)"
        var faults = FaultPlan()
        faults.unregisteredTokens = [String(format: "%064x", 1)]
        faults.scripts = [String(format: "%064x", 2): [try ScriptedAnswer(parsing: "InvalidProviderToken")]]
        let simulated = try CommandLineTests.Simulated(conninfo: conninfo, faults: faults)
        defer { simulated.stop() }
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 20)
        let environment = simulated.environment.merging(["PGPUSH_WORKER_ID": "secrets"]) { $1 }
        let worker = try ChildProcess(binary, ["run"], environment: environment)
        #expect(try await eventually(timeout: .seconds(180)) {
            try database.query("SELECT count(*) FROM pgpush.delivery_errors").int(0, 0) ?? 0 >= 2
        })
        let status = try await run(["status"], environment: environment)
        let statusJSON = try await run(["status", "--json"], environment: environment)
        let doctor = try await run(["doctor"], environment: environment)
        worker.signal(SIGTERM)
        #expect(await worker.wait(timeout: .seconds(30)) == 0)

        let keyFile = simulated.environment["PGPUSH_KEY_FILE"] ?? ""
        let keyLines = try String(contentsOfFile: keyFile, encoding: .utf8).split(separator: "\n").map(String.init)
        var secrets = ["database password": Self.databasePassword]
        for (index, line) in keyLines.enumerated() where !line.hasPrefix("-----") { secrets["key line \(index)"] = line }
        #expect(statusJSON.contains("\"queue\""), "status --json answered: \(statusJSON)")
        #expect(worker.output.contains("InvalidProviderToken") || worker.output.contains("Unregistered"))
        for (source, output) in [("run", worker.output), ("status", status), ("status --json", statusJSON), ("doctor", doctor)] {
            expectNoSecret(in: output, secrets, from: source)
        }
    }

    @Test func failuresNameTheProblemWithoutTheSecret() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-secrets-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let p12 = directory.appendingPathComponent("push.p12").path
        let openssl = try ChildProcess("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
            "-subj", "/UID=com.example.app/CN=Apple Push Services: com.example.app",
            "-keyout", directory.appendingPathComponent("push.key").path, "-out", directory.appendingPathComponent("push.pem").path,
        ])
        #expect(await openssl.wait(timeout: .seconds(30)) == 0, "\(openssl.output)")
        let export = try ChildProcess("/usr/bin/openssl", [
            "pkcs12", "-export", "-inkey", directory.appendingPathComponent("push.key").path,
            "-in", directory.appendingPathComponent("push.pem").path, "-passout", "pass:the-right-one", "-out", p12,
        ])
        #expect(await export.wait(timeout: .seconds(30)) == 0, "\(export.output)")

        let unreachable = "postgresql://pgpush:\(Self.databasePassword)@127.0.0.1:1/pgpush?connect_timeout=2"
        let environment = [
            "DATABASE_URL": unreachable, "PGPUSH_TOPIC": "com.example.app", "PGPUSH_CERT_FILE": p12,
            "PGPUSH_CERT_PASSWORD": Self.p12Password, "PGPUSH_APNS_URL": "https://127.0.0.1:1",
        ]
        let secrets = ["database password": Self.databasePassword, "p12 password": Self.p12Password]
        let outputs = [
            ("run", try await run(["run"], environment: environment)),
            ("doctor", try await run(["doctor"], environment: environment)),
            ("status", try await run(["status"], environment: environment)),
            ("migrate", try await run(["migrate"], environment: environment)),
        ]
        for (source, output) in outputs { expectNoSecret(in: output, secrets, from: source) }
        let doctor = outputs[1].1
        #expect(doctor.contains("✘ database"), "doctor said: \(doctor)")
        #expect(doctor.lowercased().contains("password"), "doctor should say the p12 password is wrong: \(doctor)")
        #expect(!outputs[2].1.isEmpty, "status should say why it could not connect")
    }
    /// A mistyped URL (the scheme's colon forgotten) is echoed by libpq with its password;
    /// so is a keyword string libpq cannot parse. No command repeats the password, and
    /// none keeps retrying such a string.
    @Test func mistypedConnectionStringsNeverShowThePassword() async throws {
        let password = Self.databasePassword
        let simulated = try CommandLineTests.Simulated(conninfo: "")
        defer { simulated.stop() }
        let mistyped = [
            "postgresql//pgpush:\(password)@127.0.0.1:1/pgpush",
            "host=127.0.0.1 port=1 password=\(password) dbname",
            "host=127.0.0.1 password='\(password) with spaces' port=notanumber",
        ]
        for conninfo in mistyped {
            for arguments in [["doctor"], ["status"], ["run"], ["migrate"]] {
                let environment = simulated.environment.merging(["DATABASE_URL": conninfo, "PGPASSWORD": password]) { $1 }
                let child = try ChildProcess(binary, arguments, environment: environment)
                let code = await child.wait(timeout: .seconds(20))
                #expect(code == 2, "pgpush \(arguments) with a mistyped URL ended \(String(describing: code))")
                #expect(!child.output.isEmpty, "pgpush \(arguments) should say what is wrong")
                expectNoSecret(in: child.output, ["database password": password], from: "\(arguments) with \(conninfo)")
            }
        }
    }
}
