import Foundation
import PGPushCore
import Postgres

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
    /// How this app's rows are retried after a 5xx, no answer or 429 TooManyRequests: the
    /// `PGPUSH_RETRY_*` variables, `--retry-*` flags and `"retry"` in the file. The worker
    /// decides each row with its own app's numbers.
    public var retry: RetryConfiguration
    /// Rows for a device token APNs already answered 410 (Unregistered, ExpiredToken) are
    /// finished `failed` with reason `KnownInvalidToken` without a request; false sends them
    /// anyway. `PGPUSH_SKIP_KNOWN_INVALID_TOKENS`, `--skip-known-invalid-tokens`,
    /// `"skip_known_invalid_tokens"` in the file; default true.
    public var skipKnownInvalidTokens: Bool

    public init(name: String, bundleID: String, environment: Environment = .production, apnsURL: String? = nil,
                caFile: String? = nil, authentication: Authentication, connections: Int = 4, ratePerConnection: Int = 100,
                retry: RetryConfiguration = .default, skipKnownInvalidTokens: Bool = true) {
        self.name = name
        self.bundleID = bundleID
        self.environment = environment
        self.apnsURL = apnsURL
        self.caFile = caFile
        self.authentication = authentication
        self.connections = connections
        self.ratePerConnection = ratePerConnection
        self.retry = retry
        self.skipKnownInvalidTokens = skipKnownInvalidTokens
    }
}

/// Everything `pgpush run` needs, validated before anything connects.
public struct WorkerConfiguration: Sendable {
    public var databaseURL: String
    /// A direct (session) connection to the same database, used only for LISTEN, when
    /// `databaseURL` goes through a transaction pooler; nil: LISTEN uses `databaseURL`.
    public var listenDatabaseURL: String?
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
    /// When set, one worker at a time (advisory lock) deletes rows finished longer ago than this.
    public var pruneAfter: Duration?
    /// `HOST:PORT` of the Prometheus / health endpoint; nil: none.
    public var metricsAddress: String?
    /// `SSLKEYLOGFILE`: where the TLS secrets of every APNs connection are appended, so a
    /// capture of the traffic can be read (Wireshark). Environment only, never a default.
    public var tlsKeyLogFile: String?

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
        for retrySetting in RetrySetting.allCases {
            if let value = setting(retrySetting.flag, retrySetting.variable) {
                try single.setRetry(retrySetting, text: value); singleAppGiven = true
            }
        }
        if let value = setting("skip-known-invalid-tokens", "PGPUSH_SKIP_KNOWN_INVALID_TOKENS") {
            switch value.trimmingCharacters(in: .whitespaces).lowercased() {
            case "true": single.skipKnownInvalidTokens = true
            case "false": single.skipKnownInvalidTokens = false
            default:
                throw ConfigurationError("app \"\(singleAppName)\": PGPUSH_SKIP_KNOWN_INVALID_TOKENS must be true or false, got \"\(value)\"")
            }
            singleAppGiven = true
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

        let databaseURL = flags["database-url"] ?? environment["DATABASE_URL"] ?? file.databaseUrl ?? ""
        do {
            try ConnectionString.validate(databaseURL)
        } catch {
            let source = flags["database-url"] != nil ? "--database-url"
                : environment["DATABASE_URL"] != nil ? "DATABASE_URL" : "database_url of the configuration file"
            throw ConfigurationError("\(source) is not a valid libpq connection string or URI: \(error)")
        }
        let host = ProcessInfo.processInfo.hostName
        var configuration = WorkerConfiguration(
            databaseURL: databaseURL,
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
        if let listen = setting("listen-database-url", "PGPUSH_LISTEN_DATABASE_URL"), !listen.isEmpty {
            do {
                try ConnectionString.validate(listen)
            } catch {
                throw ConfigurationError("PGPUSH_LISTEN_DATABASE_URL is not a valid libpq connection string or URI: \(error)")
            }
            configuration.listenDatabaseURL = listen
        }
        configuration.metricsAddress = setting("metrics-addr", "PGPUSH_METRICS_ADDR")
        if let path = environment["SSLKEYLOGFILE"], !path.isEmpty { configuration.tlsKeyLogFile = path }
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
    var retry: FileRetry?
    var skipKnownInvalidTokens: Bool?

    init(name: String) { self.name = name }

    /// One retry setting given as text (a flag or an environment variable).
    mutating func setRetry(_ setting: RetrySetting, text: String) throws(ConfigurationError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var retry = self.retry ?? FileRetry()
        switch setting.allowed {
        case .count(_, let field):
            guard let value = Int(trimmed) else { throw setting.refused("\"\(text)\"", app: name) }
            retry[keyPath: field] = Double(value)
        case .seconds(let field):
            guard let value = Double(trimmed), value.isFinite else { throw setting.refused("\"\(text)\"", app: name) }
            retry[keyPath: field] = value
        }
        self.retry = retry
    }

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
                                authentication: authentication, connections: connections, ratePerConnection: rate,
                                retry: try (retry ?? FileRetry()).validated(app: name),
                                skipKnownInvalidTokens: skipKnownInvalidTokens ?? true)
    }
}

/// `"retry"` of one app in the file; flags and environment variables fill in the same fields.
/// The counts are read as numbers too, so that 2.5 gets the setting's own message rather
/// than the decoder's.
struct FileRetry: Decodable {
    var serverErrors: Double?
    var delayMinSeconds: Double?
    var delayMaxSeconds: Double?
    var tooManyRequestsBaseSeconds: Double?
    var tooManyRequestsMaxDelaySeconds: Double?
    var tooManyRequestsMaxAttempts: Double?

    /// The settings given, over the defaults, each checked against its range and the
    /// pairs against each other (minimum ≤ maximum).
    func validated(app: String) throws(ConfigurationError) -> RetryConfiguration {
        var retry = RetryConfiguration.default
        func count(_ setting: RetrySetting, default value: Int) throws(ConfigurationError) -> Int {
            guard case .count(let range, let field) = setting.allowed, let given = self[keyPath: field] else { return value }
            guard given.isFinite, given == given.rounded(), Double(range.lowerBound) <= given, given <= Double(range.upperBound) else {
                throw setting.refused(RetrySetting.format(given), app: app)
            }
            return Int(given)
        }
        func seconds(_ setting: RetrySetting, default value: Duration) throws(ConfigurationError) -> Duration {
            guard case .seconds(let field) = setting.allowed, let given = self[keyPath: field] else { return value }
            // Checked before the conversion, which traps on values past Int64; nanosecond
            // precision, and a value that rounds to 0 ns counts as 0.
            guard given.isFinite, given > 0, given <= RetrySetting.longestDelaySeconds else {
                throw setting.refused(RetrySetting.format(given), app: app)
            }
            let nanoseconds = Int64((given * 1e9).rounded())
            guard nanoseconds > 0 else { throw setting.refused(RetrySetting.format(given), app: app) }
            return .nanoseconds(nanoseconds)
        }
        retry.serverErrorRetries = try count(.serverErrors, default: retry.serverErrorRetries)
        retry.tooManyRequestsMaximumAttempts = try count(.tooManyRequestsMaxAttempts, default: retry.tooManyRequestsMaximumAttempts)
        let minimum = try seconds(.delayMinSeconds, default: retry.serverErrorDelay.lowerBound)
        let maximum = try seconds(.delayMaxSeconds, default: retry.serverErrorDelay.upperBound)
        guard minimum <= maximum else {
            throw ConfigurationError("app \"\(app)\": \(RetrySetting.delayMinSeconds.name) must not exceed "
                                     + "\(RetrySetting.delayMaxSeconds.name): \(RetrySetting.format(minimum)) > \(RetrySetting.format(maximum))")
        }
        retry.serverErrorDelay = minimum ... maximum
        retry.tooManyRequestsBaseDelay = try seconds(.tooManyRequestsBaseSeconds, default: retry.tooManyRequestsBaseDelay)
        retry.tooManyRequestsMaximumDelay = try seconds(.tooManyRequestsMaxDelaySeconds, default: retry.tooManyRequestsMaximumDelay)
        guard retry.tooManyRequestsBaseDelay <= retry.tooManyRequestsMaximumDelay else {
            throw ConfigurationError("app \"\(app)\": \(RetrySetting.tooManyRequestsMaxDelaySeconds.name) must be at least "
                                     + "\(RetrySetting.tooManyRequestsBaseSeconds.name): "
                                     + "\(RetrySetting.format(retry.tooManyRequestsMaximumDelay)) < \(RetrySetting.format(retry.tooManyRequestsBaseDelay))")
        }
        return retry
    }
}

/// The per-app retry settings: flag, environment variable, key in the file's `"retry"`, allowed values.
enum RetrySetting: CaseIterable {
    case serverErrors, delayMinSeconds, delayMaxSeconds
    case tooManyRequestsBaseSeconds, tooManyRequestsMaxDelaySeconds, tooManyRequestsMaxAttempts

    /// The values allowed, and where they go.
    enum Allowed {
        /// A whole number in the range.
        case count(ClosedRange<Int>, WritableKeyPath<FileRetry, Double?>)
        /// Decimal seconds, more than 0 and at most `longestDelaySeconds`.
        case seconds(WritableKeyPath<FileRetry, Double?>)
    }

    /// No retry waits longer than an hour; the bound also keeps every value far from
    /// where the conversion to whole nanoseconds overflows.
    static let longestDelaySeconds = 3600.0

    var flag: String {
        switch self {
        case .serverErrors: "retry-server-errors"
        case .delayMinSeconds: "retry-delay-min-seconds"
        case .delayMaxSeconds: "retry-delay-max-seconds"
        case .tooManyRequestsBaseSeconds: "retry-429-base-seconds"
        case .tooManyRequestsMaxDelaySeconds: "retry-429-max-delay-seconds"
        case .tooManyRequestsMaxAttempts: "retry-429-max-attempts"
        }
    }

    var variable: String {
        switch self {
        case .serverErrors: "PGPUSH_RETRY_SERVER_ERRORS"
        case .delayMinSeconds: "PGPUSH_RETRY_DELAY_MIN_SECONDS"
        case .delayMaxSeconds: "PGPUSH_RETRY_DELAY_MAX_SECONDS"
        case .tooManyRequestsBaseSeconds: "PGPUSH_RETRY_429_BASE_SECONDS"
        case .tooManyRequestsMaxDelaySeconds: "PGPUSH_RETRY_429_MAX_DELAY_SECONDS"
        case .tooManyRequestsMaxAttempts: "PGPUSH_RETRY_429_MAX_ATTEMPTS"
        }
    }

    var fileKey: String {
        switch self {
        case .serverErrors: "server_errors"
        case .delayMinSeconds: "delay_min_seconds"
        case .delayMaxSeconds: "delay_max_seconds"
        case .tooManyRequestsBaseSeconds: "too_many_requests_base_seconds"
        case .tooManyRequestsMaxDelaySeconds: "too_many_requests_max_delay_seconds"
        case .tooManyRequestsMaxAttempts: "too_many_requests_max_attempts"
        }
    }

    var allowed: Allowed {
        switch self {
        case .serverErrors: .count(0...20, \.serverErrors)
        case .delayMinSeconds: .seconds(\.delayMinSeconds)
        case .delayMaxSeconds: .seconds(\.delayMaxSeconds)
        case .tooManyRequestsBaseSeconds: .seconds(\.tooManyRequestsBaseSeconds)
        case .tooManyRequestsMaxDelaySeconds: .seconds(\.tooManyRequestsMaxDelaySeconds)
        case .tooManyRequestsMaxAttempts: .count(1...100, \.tooManyRequestsMaxAttempts)
        }
    }

    /// How error messages name the setting: its variable and its key in the file.
    var name: String { "\(variable) (retry.\(fileKey) in the file)" }

    /// The setting's value is not allowed: the message names it and the allowed values.
    func refused(_ value: String, app: String) -> ConfigurationError {
        let allowedValues = switch allowed {
        case .count(let range, _): "a whole number from \(range.lowerBound) to \(range.upperBound)"
        case .seconds: "a number of seconds more than 0 and at most \(Self.format(Self.longestDelaySeconds))"
        }
        return ConfigurationError("app \"\(app)\": \(name) must be \(allowedValues), got \(value)")
    }

    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int64(seconds)) : String(seconds)
    }

    static func format(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return format(Double(seconds) + Double(attoseconds) / 1e18) + " s"
    }
}
