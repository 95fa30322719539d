import Foundation
import PGPushCore

/// One APNs app a worker serves: where to send, as whom, how fast.
public struct AppConfiguration: Sendable, Equatable {
    public enum Authentication: Sendable, Equatable {
        /// p8 key: team id, key id, key file.
        case token(teamID: String, keyID: String, keyFile: String)
        /// .p12 (or PEM with certificate and key), optional password.
        case certificate(file: String, password: String?)
    }

    public enum Environment: String, Sendable {
        case production, development
    }

    public var name: String
    /// The app's bundle id: the topic, before the push type's suffix.
    public var bundleID: String
    public var environment: Environment
    /// Overrides the APNs host, e.g. `https://127.0.0.1:2197` for the simulator.
    public var apnsURL: String?
    /// Extra trust anchors for the APNs endpoint (PEM).
    public var caFile: String?
    public var authentication: Authentication
    public var connections: Int
    /// Requests per second per connection; 0 means no cap (benchmarks only).
    public var ratePerConnection: Int

    public init(name: String, bundleID: String, environment: Environment = .production, apnsURL: String? = nil,
                caFile: String? = nil, authentication: Authentication, connections: Int = 4, ratePerConnection: Int = 100) {
        self.name = name
        self.bundleID = bundleID
        self.environment = environment
        self.apnsURL = apnsURL
        self.caFile = caFile
        self.authentication = authentication
        self.connections = connections
        self.ratePerConnection = ratePerConnection
    }
}

/// Everything `pgpush run` needs, validated before anything connects.
public struct WorkerConfiguration: Sendable {
    public var databaseURL: String
    public var apps: [AppConfiguration]
    public var workerID: String
    /// How long a claim holds a row before another worker may take it back.
    public var lease: Duration = .seconds(60)
    /// How long SIGTERM waits for requests in flight.
    public var drainTimeout: Duration = .seconds(20)
    /// Fallback when no NOTIFY arrives (rows scheduled for later, retries).
    public var pollInterval: Duration = .seconds(1)
    /// Outcomes are written at least this often.
    public var flushInterval: Duration = .milliseconds(100)
    /// Rows whose lease ended after this many attempts fail with `LeaseExpired`.
    public var rescueMaxAttempts = 5
    public var retry = RetryConfiguration.default
    /// When set, one worker at a time (advisory lock) deletes rows finished longer ago than this.
    public var pruneAfter: Duration?
    /// `HOST:PORT` of the Prometheus / health endpoint; nil: none.
    public var metricsAddress: String?

    public init(databaseURL: String, apps: [AppConfiguration], workerID: String) {
        self.databaseURL = databaseURL
        self.apps = apps
        self.workerID = workerID
    }

    /// Builds the configuration from command-line flags, then the environment,
    /// then the JSON file (`--config` / `PGPUSH_CONFIG`); the first that sets a
    /// value wins. Single-app settings describe the app named by `--app` /
    /// `PGPUSH_APP` (default `default`); the file may list more apps.
    public static func load(flags: [String: String], environment: [String: String]) throws(ConfigurationError) -> WorkerConfiguration {
        var file = ConfigurationFile()
        if let path = flags["config"] ?? environment["PGPUSH_CONFIG"] {
            file = try ConfigurationFile.read(path: path)
        }
        func setting(_ flag: String, _ variable: String) -> String? {
            flags[flag] ?? environment[variable]
        }

        var apps: [AppConfiguration] = []
        for entry in file.apps ?? [] {
            apps.append(try entry.validated())
        }
        let singleAppName = setting("app", "PGPUSH_APP") ?? "default"
        var single = file.apps?.first { $0.name == singleAppName } ?? FileApp(name: singleAppName)
        let singleAppKeys: [(String, String, WritableKeyPath<FileApp, String?>)] = [
            ("topic", "PGPUSH_TOPIC", \.topic), ("apns-env", "PGPUSH_APNS_ENV", \.environment),
            ("apns-url", "PGPUSH_APNS_URL", \.apnsUrl), ("ca-file", "PGPUSH_CA_FILE", \.caFile),
            ("team-id", "PGPUSH_TEAM_ID", \.teamId), ("key-id", "PGPUSH_KEY_ID", \.keyId),
            ("key-file", "PGPUSH_KEY_FILE", \.keyFile), ("cert-file", "PGPUSH_CERT_FILE", \.certFile),
            ("cert-password", "PGPUSH_CERT_PASSWORD", \.certPassword),
        ]
        var singleAppGiven = false
        for (flag, variable, path) in singleAppKeys {
            if let value = setting(flag, variable) { single[keyPath: path] = value; singleAppGiven = true }
        }
        if let value = setting("connections", "PGPUSH_CONNECTIONS") {
            single.connections = try integer(value, setting: "PGPUSH_CONNECTIONS"); singleAppGiven = true
        }
        if let value = setting("rate-per-connection", "PGPUSH_RATE_PER_CONNECTION") {
            single.ratePerConnection = try integer(value, setting: "PGPUSH_RATE_PER_CONNECTION"); singleAppGiven = true
        }
        if singleAppGiven {
            apps.removeAll { $0.name == singleAppName }
            apps.append(try single.validated())
        }
        guard !apps.isEmpty else {
            throw ConfigurationError("no APNs app configured: set PGPUSH_TOPIC with PGPUSH_TEAM_ID, PGPUSH_KEY_ID and "
                                     + "PGPUSH_KEY_FILE (or PGPUSH_CERT_FILE), or list apps in a --config file")
        }
        apps.sort { $0.name < $1.name }

        let host = ProcessInfo.processInfo.hostName
        var configuration = WorkerConfiguration(
            databaseURL: flags["database-url"] ?? environment["DATABASE_URL"] ?? file.databaseUrl ?? "",
            apps: apps,
            workerID: flags["worker-id"] ?? environment["PGPUSH_WORKER_ID"]
                ?? "\(host)-\(getpid())-\(UInt32.random(in: 0...UInt32.max) % 0xFFFF)")
        if let value = setting("lease-seconds", "PGPUSH_LEASE_SECONDS") ?? file.leaseSeconds.map(String.init) {
            let seconds = try integer(value, setting: "PGPUSH_LEASE_SECONDS")
            guard seconds >= 5 else { throw ConfigurationError("PGPUSH_LEASE_SECONDS must be at least 5") }
            configuration.lease = .seconds(seconds)
        }
        if let value = setting("drain-seconds", "PGPUSH_DRAIN_SECONDS") ?? file.drainSeconds.map(String.init) {
            configuration.drainTimeout = .seconds(try integer(value, setting: "PGPUSH_DRAIN_SECONDS"))
        }
        configuration.metricsAddress = setting("metrics-addr", "PGPUSH_METRICS_ADDR")
        if let value = setting("prune-after-days", "PGPUSH_PRUNE_AFTER_DAYS") {
            let days = try integer(value, setting: "PGPUSH_PRUNE_AFTER_DAYS")
            configuration.pruneAfter = days > 0 ? .seconds(days * 86_400) : nil
        }
        return configuration
    }

    /// The apps a configuration file lists, validated (what `--config` reads; also the fuzz target).
    public static func apps(fromFile data: Data, source: String = "configuration file") throws(ConfigurationError) -> [AppConfiguration] {
        var apps: [AppConfiguration] = []
        for entry in try ConfigurationFile.decode(data, source: source).apps ?? [] {
            apps.append(try entry.validated())
        }
        return apps
    }

    private static func integer(_ text: String, setting: String) throws(ConfigurationError) -> Int {
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)), value >= 0 else {
            throw ConfigurationError("\(setting) must be a whole number ≥ 0, got \"\(text)\"")
        }
        return value
    }
}

/// A setting is missing or wrong; the message names it.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The JSON configuration file. Keys are snake_case in the file
/// (`database_url`, `key_file`, `rate_per_connection`, …).
struct ConfigurationFile: Decodable {
    var databaseUrl: String?
    var leaseSeconds: Int?
    var drainSeconds: Int?
    var apps: [FileApp]?

    static func read(path: String) throws(ConfigurationError) -> ConfigurationFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("cannot read the configuration file \(path)")
        }
        return try decode(data, source: path)
    }

    static func decode(_ data: Data, source: String) throws(ConfigurationError) -> ConfigurationFile {
        do {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            return try decoder.decode(ConfigurationFile.self, from: data)
        } catch {
            throw ConfigurationError("configuration file \(source) is not valid: \(Self.explain(error))")
        }
    }

    private static func explain(_ error: any Error) -> String {
        switch error {
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
             DecodingError.keyNotFound(_, let context), DecodingError.dataCorrupted(let context):
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return (path.isEmpty ? "" : "at \(path): ") + context.debugDescription
        default:
            return String(describing: error)
        }
    }
}

struct FileApp: Decodable {
    var name: String
    var topic: String?
    var environment: String?
    var apnsUrl: String?
    var caFile: String?
    var teamId: String?
    var keyId: String?
    var keyFile: String?
    var certFile: String?
    var certPassword: String?
    var connections: Int?
    var ratePerConnection: Int?

    init(name: String) { self.name = name }

    func validated() throws(ConfigurationError) -> AppConfiguration {
        let label = "app \"\(name)\""
        guard !name.isEmpty else { throw ConfigurationError("an app has an empty name") }
        guard let topic, !topic.isEmpty else {
            throw ConfigurationError("\(label): the bundle id is missing (PGPUSH_TOPIC, or \"topic\" in the file)")
        }
        let environment: AppConfiguration.Environment
        switch self.environment ?? "production" {
        case "production": environment = .production
        case "development", "sandbox": environment = .development
        case let other: throw ConfigurationError("\(label): PGPUSH_APNS_ENV must be production or development, got \"\(other)\"")
        }
        let tokenParts = [teamId, keyId, keyFile].compactMap { $0 }
        let authentication: AppConfiguration.Authentication
        switch (tokenParts.count, certFile) {
        case (3, nil):
            authentication = .token(teamID: teamId ?? "", keyID: keyId ?? "", keyFile: keyFile ?? "")
        case (0, let certificate?):
            authentication = .certificate(file: certificate, password: certPassword)
        case (0, nil):
            throw ConfigurationError("\(label): no credentials: set PGPUSH_TEAM_ID, PGPUSH_KEY_ID and PGPUSH_KEY_FILE "
                                     + "(token auth) or PGPUSH_CERT_FILE (certificate auth)")
        case (_, nil):
            throw ConfigurationError("\(label): token auth needs all of PGPUSH_TEAM_ID, PGPUSH_KEY_ID and PGPUSH_KEY_FILE")
        default:
            throw ConfigurationError("\(label): choose token auth (PGPUSH_KEY_FILE) or certificate auth (PGPUSH_CERT_FILE), not both")
        }
        let connections = self.connections ?? 4
        guard (1...64).contains(connections) else {
            throw ConfigurationError("\(label): PGPUSH_CONNECTIONS must be between 1 and 64, got \(connections)")
        }
        let rate = ratePerConnection ?? 100
        guard rate >= 0 else { throw ConfigurationError("\(label): PGPUSH_RATE_PER_CONNECTION must be ≥ 0") }
        if let apnsUrl, !apnsUrl.hasPrefix("https://") {
            throw ConfigurationError("\(label): PGPUSH_APNS_URL must start with https:// (TLS is always on), got \"\(apnsUrl)\"")
        }
        return AppConfiguration(name: name, bundleID: topic, environment: environment, apnsURL: apnsUrl, caFile: caFile,
                                authentication: authentication, connections: connections, ratePerConnection: rate)
    }
}
