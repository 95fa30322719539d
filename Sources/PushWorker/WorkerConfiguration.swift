import APNsCore
import Foundation
import HTTP2TLS
import PGPushCore
import Postgres
import PushTransport
import WebPushClient

/// One app a worker serves: for each service it has credentials for, where to send and as
/// whom; how fast and how rows are retried.
package struct AppConfiguration: Sendable, Equatable {
    package enum Authentication: Sendable, Equatable {
        /// p8 key: team id, key id, key file.
        case token(teamID: String, keyID: String, keyFile: String)
        /// .p12 (or PEM with certificate and key), optional password.
        case certificate(file: String, password: String?)
    }

    /// FCM HTTP v1: `fcm_credentials_file`, `fcm_project_id`, `fcm_url`.
    package struct FCM: Sendable, Equatable {
        /// A Google service-account key file (JSON).
        package var credentialsFile: String
        /// nil: the key file's `project_id`.
        package var projectID: String?
        /// nil: FCM's own host; the simulator's URL in tests.
        package var url: String?

        package init(credentialsFile: String, projectID: String? = nil, url: String? = nil) {
            self.credentialsFile = credentialsFile
            self.projectID = projectID
            self.url = url
        }
    }

    /// Web Push: `vapid_key_file`, `vapid_subject`, `webpush_allowed_origins`.
    package struct WebPush: Sendable, Equatable {
        /// The application server's EC P-256 private key (PEM).
        package var vapidKeyFile: String
        package var vapidSubject: VAPIDSubject
        /// The origins a subscription's endpoint may name; anything else fails `EndpointNotAllowed`.
        package var allowedOrigins: AllowedOrigins

        package init(vapidKeyFile: String, vapidSubject: VAPIDSubject, allowedOrigins: AllowedOrigins = .publicPushServices) {
            self.vapidKeyFile = vapidKeyFile
            self.vapidSubject = vapidSubject
            self.allowedOrigins = allowedOrigins
        }
    }

    package var name: String
    /// The app's bundle id: the topic, before the push type's suffix (APNs; empty without APNs).
    package var bundleID: String
    package var environment: APNsEnvironment
    /// Overrides the APNs host, e.g. `https://127.0.0.1:2197` for the simulator.
    package var apnsURL: String?
    /// Extra trust anchors for the APNs endpoint (PEM).
    package var caFile: String?
    /// APNs credentials; nil: the app sends no APNs rows (they wait).
    package var authentication: Authentication?
    /// FCM credentials; nil: the app sends no FCM rows (they wait).
    package var fcm: FCM?
    /// The VAPID key and subject; nil: the app sends no Web Push rows (they wait).
    package var webPush: WebPush?
    /// HTTP/2 connections per service.
    package var connections: Int
    /// Requests per second per connection; 0 means no cap (benchmarks only).
    package var ratePerConnection: Int
    /// Requests per second for the app and each service across every worker together,
    /// shared through the database; 0: none (each worker only keeps its connections' caps).
    package var ratePerApp: Int
    /// The HTTP proxy every connection of the app goes through (`HTTPS_PROXY`, `--proxy`;
    /// the same for every app of a worker); nil: straight to the services.
    package var proxy: HTTPProxy?

    /// The app's connection count and cap as each service's sender takes them.
    var connectionSettings: ConnectionSettings {
        var settings = ConnectionSettings()
        settings.connections = connections
        settings.ratePerConnection = ratePerConnection
        settings.proxy = proxy
        // A sender's own: made here, it is made for each sender (one per app and service).
        settings.sharedWindow = ratePerApp > 0 ? SharedSubmitWindow() : nil
        return settings
    }
    /// How this app's rows are retried after a 5xx, no answer or 429 TooManyRequests: the
    /// `PGPUSH_RETRY_*` variables, `--retry-*` flags and `"retry"` in the file. The worker
    /// decides each row with its own app's numbers.
    package var retry: RetryConfiguration
    /// Rows for a device token APNs already answered 410 (Unregistered, ExpiredToken) are
    /// finished `failed` with reason `KnownInvalidToken` without a request; false sends them
    /// anyway. `PGPUSH_SKIP_KNOWN_INVALID_TOKENS`, `--skip-known-invalid-tokens`,
    /// `"skip_known_invalid_tokens"` in the file; default true.
    package var skipKnownInvalidTokens: Bool

    package init(name: String, bundleID: String, environment: APNsEnvironment = .production, apnsURL: String? = nil,
                caFile: String? = nil, authentication: Authentication?, fcm: FCM? = nil, webPush: WebPush? = nil,
                connections: Int = ConnectionSettings().connections,
                ratePerConnection: Int = RateCap.standardPerConnection, ratePerApp: Int = 0,
                retry: RetryConfiguration = .default, skipKnownInvalidTokens: Bool = true) {
        self.name = name
        self.bundleID = bundleID
        self.environment = environment
        self.apnsURL = apnsURL
        self.caFile = caFile
        self.authentication = authentication
        self.fcm = fcm
        self.webPush = webPush
        self.connections = connections
        self.ratePerConnection = ratePerConnection
        self.ratePerApp = ratePerApp
        self.retry = retry
        self.skipKnownInvalidTokens = skipKnownInvalidTokens
    }
}

/// Everything `pgpush run` needs, validated before anything connects.
package struct WorkerConfiguration: Sendable {
    /// The highest `rate_per_app`: each worker keeps a second of its share's send times.
    package static let maximumRatePerApp = 100_000
    package var databaseURL: String
    /// A direct (session) connection to the same database, used only for LISTEN, when
    /// `databaseURL` goes through a transaction pooler; nil: LISTEN uses `databaseURL`.
    package var listenDatabaseURL: String?
    package var apps: [AppConfiguration]
    package var workerID: String
    /// How long a claim holds a row before another worker may take it back.
    package var lease: Duration = .seconds(60)
    /// How long SIGTERM waits for requests in flight.
    package var drainTimeout: Duration = .seconds(20)
    /// Fallback when no NOTIFY arrives (rows scheduled for later, retries).
    package var pollInterval: Duration = .seconds(1)
    /// Outcomes are written at least this often.
    package var flushInterval: Duration = .milliseconds(100)
    /// Rows whose lease ended after this many attempts fail with `LeaseExpired`.
    package var rescueMaxAttempts = 5
    /// When set, one worker at a time (advisory lock) deletes rows finished longer ago than this.
    package var pruneAfter: Duration?
    /// `HOST:PORT` of the Prometheus / health endpoint; nil: none.
    package var metricsAddress: String?
    /// `SSLKEYLOGFILE`: where the TLS secrets of every APNs connection are appended, so a
    /// capture of the traffic can be read (Wireshark). Environment only, never a default.
    package var tlsKeyLogFile: String?

    package init(databaseURL: String, apps: [AppConfiguration], workerID: String) {
        self.databaseURL = databaseURL
        self.apps = apps
        self.workerID = workerID
    }

    /// Builds the configuration from command-line flags, then the environment,
    /// then the JSON file (`--config` / `PGPUSH_CONFIG`); the first that sets a
    /// value wins. Single-app settings describe the app named by `--app` /
    /// `PGPUSH_APP` (default `default`); the file may list more apps.
    package static func load(flags: [String: String], environment: [String: String]) throws(ConfigurationError) -> WorkerConfiguration {
        try checkNoNUL(flags: flags, environment: environment)
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
            ("fcm-credentials-file", "PGPUSH_FCM_CREDENTIALS_FILE", \.fcmCredentialsFile),
            ("fcm-project-id", "PGPUSH_FCM_PROJECT_ID", \.fcmProjectId), ("fcm-url", "PGPUSH_FCM_URL", \.fcmUrl),
            ("vapid-key-file", "PGPUSH_VAPID_KEY_FILE", \.vapidKeyFile), ("vapid-subject", "PGPUSH_VAPID_SUBJECT", \.vapidSubject),
            ("webpush-allowed-origins", "PGPUSH_WEBPUSH_ALLOWED_ORIGINS", \.webpushAllowedOrigins),
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
        if let value = setting("rate-per-app", "PGPUSH_RATE_PER_APP") {
            single.ratePerApp = try integer(value, setting: "PGPUSH_RATE_PER_APP"); singleAppGiven = true
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
            throw ConfigurationError("no app configured: set PGPUSH_TOPIC with PGPUSH_TEAM_ID, PGPUSH_KEY_ID and "
                                     + "PGPUSH_KEY_FILE (or PGPUSH_CERT_FILE) for APNs, PGPUSH_FCM_CREDENTIALS_FILE for FCM, "
                                     + "PGPUSH_VAPID_KEY_FILE with PGPUSH_VAPID_SUBJECT for Web Push, or list apps in a --config file")
        }
        try checkAppCount(apps.count)
        apps.sort { $0.name < $1.name }
        let proxy = try Self.proxy(flag: flags["proxy"], environment: environment, file: file)
        for index in apps.indices { apps[index].proxy = proxy }
        for app in apps { try checkRegularFiles(app) }

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
    package static func apps(fromFile data: Data, source: String = "configuration file") throws(ConfigurationError) -> [AppConfiguration] {
        var apps: [AppConfiguration] = []
        for entry in try ConfigurationFile.decode(data, source: source).apps ?? [] {
            apps.append(try entry.validated())
        }
        return apps
    }

    /// The proxy as curl finds it: `--proxy`, else `https_proxy`, else `HTTPS_PROXY`, else the
    /// file's `proxy`; `NO_PROXY` (`no_proxy`, the file's `no_proxy`) lists hosts reached
    /// directly. Empty: none. A proxy URL that cannot be used is refused, its password unshown.
    static func proxy(flag: String?, environment: [String: String], file: ConfigurationFile) throws(ConfigurationError) -> HTTPProxy? {
        let sources: [(String, String?)] = [("--proxy", flag), ("https_proxy", environment["https_proxy"]),
                                            ("HTTPS_PROXY", environment["HTTPS_PROXY"]), ("proxy of the configuration file", file.proxy)]
        guard let (source, url) = sources.first(where: { $0.1 != nil }).map({ ($0.0, $0.1 ?? "") }), !url.isEmpty else { return nil }
        let noProxy = environment["no_proxy"] ?? environment["NO_PROXY"] ?? file.noProxy
        do {
            return try HTTPProxy(url: url, noProxy: noProxy)
        } catch {
            throw ConfigurationError("\(source): \(error.description)")
        }
    }

    private static func integer(_ text: String, setting: String) throws(ConfigurationError) -> Int {
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)), value >= 0 else {
            throw ConfigurationError("\(setting) must be a whole number ≥ 0, got \"\(text)\"")
        }
        return value
    }
}
