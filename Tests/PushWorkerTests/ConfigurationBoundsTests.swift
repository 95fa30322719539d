import Foundation
import PushWorker
import Testing

/// Configuration that lies: NUL bytes inside strings, files that are not files, more apps
/// than a worker can carry. Each is refused by `WorkerConfiguration.load`, naming the setting.
@Suite struct ConfigurationBoundsTests {
    final class Scratch {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-bounds-\(UUID())").path
        init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(atPath: path) }

        func write(_ text: String, to name: String) throws -> String {
            let file = path + "/" + name
            try Data(text.utf8).write(to: URL(fileURLWithPath: file))
            return file
        }
    }

    static func app(_ name: String = "a", _ fields: String = "") -> String {
        #"{"name": "\#(name)", "topic": "com.example.app", "team_id": "TEAM123456", "key_id": "KEY1234567", "key_file": "/keys/a.p8"\#(fields)}"#
    }

    func loadFile(_ json: String, environment: [String: String] = [:]) throws -> WorkerConfiguration {
        let scratch = try Scratch()
        let file = try scratch.write(json, to: "apps.json")
        return try withExtendedLifetime(scratch) {
            try WorkerConfiguration.load(flags: ["config": file], environment: environment)
        }
    }

    func refusal(_ body: () throws -> WorkerConfiguration) -> String {
        do {
            _ = try body()
            return "(accepted)"
        } catch let error as ConfigurationError {
            return error.description
        } catch {
            return "(other error: \(error))"
        }
    }

    /// `"\u0000"` in a JSON string decodes to a NUL; every string setting refuses it by its key.
    /// Each case: the file's key, its value as JSON text, and how the refusal names it.
    @Test(arguments: [
        ("database_url", #""host=/tmp\u0000 dbname=x""#, "database_url"),
        ("name", #""a\u0000b""#, "apps[1].name"),
        ("topic", #""com.x\u0000y""#, "apps[1].topic"),
        ("key_file", #""/keys/b.p8\u0000.bak""#, "apps[1].key_file"),
        ("key_id", #""KEY\u00001234567""#, "apps[1].key_id"),
        ("team_id", #""TEAM\u0000123456""#, "apps[1].team_id"),
        ("ca_file", #""/ca.pem\u0000""#, "apps[1].ca_file"),
        ("apns_url", #""https://x\u0000.example""#, "apps[1].apns_url"),
        ("environment", #""production\u0000""#, "apps[1].environment"),
    ])
    func aNULInAFileStringIsRefusedByName(key: String, value: String, setting: String) throws {
        var second = ["name": #""b""#, "topic": #""com.example.app""#, "team_id": #""TEAM123456""#,
                      "key_id": #""KEY1234567""#, "key_file": #""/keys/b.p8""#]
        var databaseURL = #""host=/tmp""#
        if key == "database_url" { databaseURL = value } else { second[key] = value }
        let app = "{" + second.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ") + "}"
        let json = "{\"database_url\": \(databaseURL), \"apps\": [\(Self.app()), \(app)]}"
        let message = refusal { try loadFile(json) }
        #expect(message.contains(setting) && message.contains("NUL"), "\(json) → \(message)")
        // The message never carries the NUL itself (it goes to a terminal or a log).
        #expect(!message.utf8.contains(0))
    }

    @Test func aNULInACertificateSettingIsRefusedByName() throws {
        for (file, password, setting) in [(#"/c.p12\u0000"#, "pw", "apps[0].cert_file"), ("/c.p12", #"p\u0000w"#, "apps[0].cert_password")] {
            let json = #"{"database_url": "host=/tmp", "apps": [{"name": "c", "topic": "com.x", "cert_file": "\#(file)", "cert_password": "\#(password)"}]}"#
            let message = refusal { try loadFile(json) }
            #expect(message.contains(setting) && message.contains("NUL"), "\(json) → \(message)")
        }
    }

    /// Flags and variables cannot carry a NUL through argv or the environment, but `load`
    /// takes them as Swift strings: refused the same way, by their names.
    @Test func aNULInAFlagOrVariableIsRefusedByName() {
        let environment = ["DATABASE_URL": "host=/tmp", "PGPUSH_TOPIC": "com.example.app", "PGPUSH_TEAM_ID": "TEAM123456",
                           "PGPUSH_KEY_ID": "KEY1234567", "PGPUSH_KEY_FILE": "/keys/a.p8"]
        let flag = refusal { try WorkerConfiguration.load(flags: ["key-file": "/keys/a.p8\0x"], environment: environment) }
        #expect(flag.contains("--key-file") && flag.contains("NUL"), "\(flag)")
        var poisoned = environment
        poisoned["PGPUSH_TOPIC"] = "com.example\0evil"
        let variable = refusal { try WorkerConfiguration.load(flags: [:], environment: poisoned) }
        #expect(variable.contains("PGPUSH_TOPIC") && variable.contains("NUL"), "\(variable)")
        poisoned = environment
        poisoned["DATABASE_URL"] = "host=/tmp\0 dbname=other"
        let database = refusal { try WorkerConfiguration.load(flags: [:], environment: poisoned) }
        #expect(database.contains("DATABASE_URL") && database.contains("NUL"), "\(database)")
    }

    @Test func appsPastTheLimitAreRefusedNamingIt() throws {
        let limit = WorkerConfiguration.maximumApps
        #expect(limit == 100)
        let atLimit = "{\"database_url\": \"host=/tmp\", \"apps\": [" + (0..<limit).map { Self.app("app\($0)") }.joined(separator: ",") + "]}"
        #expect(try loadFile(atLimit).apps.count == limit)
        let over = "{\"database_url\": \"host=/tmp\", \"apps\": [" + (0...limit).map { Self.app("app\($0)") }.joined(separator: ",") + "]}"
        let message = refusal { try loadFile(over) }
        #expect(message.contains("\(limit + 1) apps") && message.contains("at most \(limit)"), "\(message)")
        // One more app from the variables on top of a full file is one too many as well.
        let plusOne = refusal {
            try loadFile(atLimit, environment: ["PGPUSH_APP": "extra", "PGPUSH_TOPIC": "com.example.extra", "PGPUSH_CERT_FILE": "/c.p12"])
        }
        #expect(plusOne.contains("\(limit + 1) apps") && plusOne.contains("at most \(limit)"), "\(plusOne)")
        // The fuzz target's entry (the file's apps alone) holds the same line.
        #expect(throws: ConfigurationError.self) { try WorkerConfiguration.apps(fromFile: Data(over.utf8)) }
    }

    /// A configuration file past 1 MiB is refused before it is parsed, naming the limit.
    @Test func aHugeConfigurationFileIsRefusedUnparsed() throws {
        let padding = String(repeating: " ", count: 1 << 20)
        let message = refusal { try loadFile("{\"database_url\": \"host=/tmp\", \"apps\": [" + Self.app() + "]}" + padding) }
        #expect(message.contains("--config") && message.contains("larger than 1 MiB"), "\(message)")
        // Just under the limit is read as usual.
        let fits = String(padding.dropFirst(1024))
        #expect(try loadFile("{\"database_url\": \"host=/tmp\", \"apps\": [" + Self.app() + "]}" + fits).apps.count == 1)
    }

    /// A configuration built in code, not by `load`, meets the same two lines in `Worker.init`:
    /// an error, not a trap on a duplicate key nor a worker with 101 apps.
    @Test func workerRefusesTooManyOrRepeatedApps() {
        func app(_ name: String) -> AppConfiguration {
            AppConfiguration(name: name, bundleID: "com.example.app", authentication: .certificate(file: "/c.p12", password: nil))
        }
        let many = WorkerConfiguration(databaseURL: "host=/tmp", apps: (0...WorkerConfiguration.maximumApps).map { app("app\($0)") },
                                       workerID: "bounds")
        #expect(throws: ConfigurationError.self) { try Worker(configuration: many, senders: []) }
        let repeated = WorkerConfiguration(databaseURL: "host=/tmp", apps: [app("same"), app("same")], workerID: "bounds")
        #expect(throws: ConfigurationError.self) { try Worker(configuration: repeated, senders: []) }
    }

    /// Apps repeated by name would be served once each: a file that names one twice is refused.
    @Test func aDuplicateAppNameIsRefused() throws {
        let json = "{\"database_url\": \"host=/tmp\", \"apps\": [" + Self.app("same") + "," + Self.app("same") + "]}"
        let message = refusal { try loadFile(json) }
        #expect(message.contains("\"same\"") && message.contains("more than once"), "\(message)")
    }

    /// A key, certificate or CA path that is a FIFO, a directory or a device is refused before
    /// anything opens it (a FIFO would block the open for ever), naming the setting.
    @Test func credentialPathsThatAreNotRegularFilesAreRefused() throws {
        let scratch = try Scratch()
        let fifo = scratch.path + "/key.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let key = try scratch.write("not really a key", to: "AuthKey.p8")
        let base = ["DATABASE_URL": "host=/tmp", "PGPUSH_TOPIC": "com.example.app", "PGPUSH_TEAM_ID": "TEAM123456",
                    "PGPUSH_KEY_ID": "KEY1234567", "PGPUSH_KEY_FILE": key]
        #expect(try WorkerConfiguration.load(flags: [:], environment: base).apps.count == 1)
        let cases: [(String, String, String)] = [
            ("PGPUSH_KEY_FILE", fifo, "FIFO"), ("PGPUSH_KEY_FILE", scratch.path, "directory"),
            ("PGPUSH_KEY_FILE", "/dev/zero", "device"), ("PGPUSH_CA_FILE", fifo, "FIFO"), ("PGPUSH_CA_FILE", scratch.path, "directory"),
        ]
        for (variable, path, kind) in cases {
            let message = refusal { try WorkerConfiguration.load(flags: [:], environment: base.merging([variable: path]) { $1 }) }
            #expect(message.contains(variable) && message.contains(path) && message.contains(kind)
                    && message.contains("not a regular file"), "\(variable)=\(path) → \(message)")
        }
        var certificate = base
        certificate["PGPUSH_KEY_FILE"] = nil
        certificate["PGPUSH_TEAM_ID"] = nil
        certificate["PGPUSH_KEY_ID"] = nil
        certificate["PGPUSH_CERT_FILE"] = fifo
        let message = refusal { try WorkerConfiguration.load(flags: [:], environment: certificate) }
        #expect(message.contains("PGPUSH_CERT_FILE") && message.contains("FIFO"), "\(message)")
        let config = refusal { try WorkerConfiguration.load(flags: ["config": fifo], environment: [:]) }
        #expect(config.contains("--config") && config.contains("FIFO"), "\(config)")
        // A path that does not exist is left to the loading, which says "not found".
        let missing = base.merging(["PGPUSH_KEY_FILE": scratch.path + "/missing.p8"]) { $1 }
        #expect(try WorkerConfiguration.load(flags: [:], environment: missing).apps.count == 1)
    }
}
