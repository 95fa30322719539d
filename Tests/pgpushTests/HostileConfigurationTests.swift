import Foundation
import PGPushTestSupport
import PushCrypto
import Testing

/// `pgpush run` given configuration that lies: a key or CA "file" that is a FIFO or a
/// directory, a NUL inside a string, more apps than a worker serves. Each is refused at
/// start-up with exit 2 and a message naming the setting, never a hang or a truncated value.
@Suite(.enabled(if: ChildProcess.pgpushBinary != nil, "the pgpush binary is built by `swift build` before the tests"))
struct HostileConfigurationTests {
    let binary = ChildProcess.pgpushBinary ?? "pgpush"

    /// Runs `pgpush run`; nil code: still running after `timeout` (it is killed with the object).
    func run(_ arguments: [String] = [], environment: [String: String],
             timeout: Duration = .seconds(60)) async throws -> (code: Int32?, output: String) {
        let child = try ChildProcess(binary, ["run"] + arguments, environment: environment)
        let code = await child.wait(timeout: timeout)
        return (code, child.output)
    }

    /// A directory of its own, removed at the end, with a valid p8 key in it.
    final class Scratch {
        let path: String
        let keyFile: String

        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-hostile-\(UUID())").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            keyFile = path + "/AuthKey.p8"
            try ES256PrivateKey.generate().writePKCS8(toFile: keyFile)
        }

        func fifo(_ name: String) throws -> String {
            let fifo = path + "/" + name
            guard mkfifo(fifo, 0o600) == 0 else { throw TestSetupError("mkfifo \(fifo): errno \(errno)") }
            return fifo
        }

        func write(_ text: String, to name: String) throws -> String {
            let file = path + "/" + name
            try Data(text.utf8).write(to: URL(fileURLWithPath: file))
            return file
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    func tokenEnvironment(_ scratch: Scratch) -> [String: String] {
        ["DATABASE_URL": "host=/nonexistent", "PGPUSH_TOPIC": "com.example.app", "PGPUSH_TEAM_ID": "TEAM123456",
         "PGPUSH_KEY_ID": "KEY1234567", "PGPUSH_KEY_FILE": scratch.keyFile, "PGPUSH_APNS_URL": "https://127.0.0.1:1"]
    }

    @Test func aKeyFileThatIsAFIFOExits2NamingIt() async throws {
        let scratch = try Scratch()
        let fifo = try scratch.fifo("key.fifo")
        let result = try await run(environment: tokenEnvironment(scratch).merging(["PGPUSH_KEY_FILE": fifo]) { $1 })
        #expect(result.code == 2, "pgpush run ended \(String(describing: result.code)): \(result.output)")
        #expect(result.output.contains("PGPUSH_KEY_FILE"), "\(result.output)")
        #expect(result.output.contains("not a regular file"), "\(result.output)")
    }

    @Test func aKeyFileSymlinkedToAFIFOExits2NamingIt() async throws {
        let scratch = try Scratch()
        let fifo = try scratch.fifo("key.fifo")
        let link = scratch.path + "/AuthKey-link.p8"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: fifo)
        let result = try await run(environment: tokenEnvironment(scratch).merging(["PGPUSH_KEY_FILE": link]) { $1 })
        #expect(result.code == 2, "pgpush run ended \(String(describing: result.code)): \(result.output)")
        #expect(result.output.contains("PGPUSH_KEY_FILE"), "\(result.output)")
    }

    @Test func aCAFileThatIsAFIFOExits2NamingIt() async throws {
        let scratch = try Scratch()
        let fifo = try scratch.fifo("ca.fifo")
        let result = try await run(environment: tokenEnvironment(scratch).merging(["PGPUSH_CA_FILE": fifo]) { $1 })
        #expect(result.code == 2, "pgpush run ended \(String(describing: result.code)): \(result.output)")
        #expect(result.output.contains("PGPUSH_CA_FILE"), "\(result.output)")
        #expect(result.output.contains("not a regular file"), "\(result.output)")
    }

    @Test func aCertificateFileThatIsAFIFOExits2NamingIt() async throws {
        let scratch = try Scratch()
        let fifo = try scratch.fifo("cert.fifo")
        let result = try await run(environment: [
            "DATABASE_URL": "host=/nonexistent", "PGPUSH_TOPIC": "com.example.app", "PGPUSH_CERT_FILE": fifo,
        ])
        #expect(result.code == 2, "pgpush run ended \(String(describing: result.code)): \(result.output)")
        #expect(result.output.contains("PGPUSH_CERT_FILE"), "\(result.output)")
    }

    @Test func aCAFileThatIsADirectoryExits2NamingIt() async throws {
        let scratch = try Scratch()
        let result = try await run(environment: tokenEnvironment(scratch).merging(["PGPUSH_CA_FILE": scratch.path]) { $1 })
        #expect(result.code == 2, "pgpush run ended \(String(describing: result.code)): \(result.output)")
        #expect(result.output.contains("PGPUSH_CA_FILE"), "\(result.output)")
        #expect(result.output.contains("not a regular file"), "\(result.output)")
    }

    @Test func aConfigurationFileThatIsAFIFOExits2NamingIt() async throws {
        let scratch = try Scratch()
        let fifo = try scratch.fifo("apps.json")
        let result = try await run(["--config", fifo], environment: ["DATABASE_URL": "host=/nonexistent"])
        #expect(result.code == 2, "pgpush run ended \(String(describing: result.code)): \(result.output)")
        #expect(result.output.contains("--config"), "\(result.output)")
    }

    /// JSON's "\u0000" decodes to a NUL, which C sees as the end of the string: the key file,
    /// the database URL and the topic would each be read short. Refused, naming the setting.
    @Test(arguments: [
        (#"{"database_url": "host=/nonexistent", "apps": [{"name": "a", "topic": "com.example.app", "team_id": "TEAM123456", "key_id": "KEY1234567", "key_file": "KEYFILE\u0000.bak"}]}"#, #"apps[0].key_file"#),
        (#"{"database_url": "host=/nonexistent\u0000 dbname=other", "apps": [{"name": "a", "topic": "com.example.app", "team_id": "TEAM123456", "key_id": "KEY1234567", "key_file": "KEYFILE"}]}"#, "database_url"),
        (#"{"database_url": "host=/nonexistent", "apps": [{"name": "a", "topic": "com.example.app\u0000evil", "team_id": "TEAM123456", "key_id": "KEY1234567", "key_file": "KEYFILE"}]}"#, #"apps[0].topic"#),
        (#"{"database_url": "host=/nonexistent", "apps": [{"name": "a\u0000b", "topic": "com.example.app", "team_id": "TEAM123456", "key_id": "KEY1234567", "key_file": "KEYFILE"}]}"#, #"apps[0].name"#),
    ])
    func aNULInAConfigurationStringExits2NamingIt(json: String, setting: String) async throws {
        let scratch = try Scratch()
        let file = try scratch.write(json.replacingOccurrences(of: "KEYFILE", with: scratch.keyFile), to: "apps.json")
        let result = try await run(["--config", file], environment: [:])
        #expect(result.code == 2, "pgpush run ended \(String(describing: result.code)): \(result.output)")
        #expect(result.output.contains(setting) && result.output.contains("NUL"), "\(result.output)")
    }

    @Test func moreAppsThanTheLimitExits2NamingIt() async throws {
        let scratch = try Scratch()
        let apps = (0..<101).map { index in
            #"{"name": "app\#(index)", "topic": "com.example.app\#(index)", "team_id": "TEAM123456", "key_id": "KEY1234567", "key_file": "\#(scratch.keyFile)"}"#
        }
        let file = try scratch.write(#"{"database_url": "host=/nonexistent", "apps": ["# + apps.joined(separator: ",") + "]}", to: "apps.json")
        let result = try await run(["--config", file], environment: [:])
        #expect(result.code == 2, "pgpush run ended \(String(describing: result.code)): \(result.output)")
        #expect(result.output.contains("101 apps") && result.output.contains("at most 100"), "\(result.output)")
    }
}
