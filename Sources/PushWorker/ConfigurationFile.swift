import APNsCore
import Foundation
import PGPushCore
import Postgres
import PushTransport
import WebPushClient

/// A setting is missing or wrong; the message names it.
package struct ConfigurationError: Error, CustomStringConvertible, Sendable, Equatable {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// The JSON configuration file. Keys are snake_case in the file
/// (`database_url`, `key_file`, `rate_per_connection`, …).
struct ConfigurationFile: Decodable {
    var databaseUrl: String?
    var leaseSeconds: Int?
    var drainSeconds: Int?
    var proxy: String?
    var noProxy: String?
    var apps: [FileApp]?

    /// The file's size at most. `WorkerConfiguration.maximumApps` apps, each with long paths
    /// and a retry section, take well under 100 KB; a bigger file is a mistake or an attack,
    /// refused before it is parsed (40,000 apps, 5 MB, took seconds and 170 MB to decode).
    static let maximumSize = 1 << 20

    static func read(path: String) throws(ConfigurationError) -> ConfigurationFile {
        // Checked before the read, which a FIFO would block for ever.
        if let kind = RegularFile.notRegular(path) {
            throw ConfigurationError("--config / PGPUSH_CONFIG: \(path) is \(kind), not a regular file")
        }
        // O_NONBLOCK: should the path become a FIFO after the check, the open still returns.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ConfigurationError("cannot read the configuration file \(path): \(String(cString: strerror(errno)))")
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw ConfigurationError("--config / PGPUSH_CONFIG: \(path) is not a regular file")
        }
        guard let data = try? handle.read(upToCount: maximumSize + 1) ?? Data() else {
            throw ConfigurationError("cannot read the configuration file \(path)")
        }
        guard data.count <= maximumSize else {
            throw ConfigurationError("--config / PGPUSH_CONFIG: \(path) is larger than \(maximumSize >> 20) MiB; "
                                     + "\(WorkerConfiguration.maximumApps) apps, the most a worker serves, fit in far less")
        }
        return try decode(data, source: path)
    }

    static func decode(_ data: Data, source: String) throws(ConfigurationError) -> ConfigurationFile {
        let file: ConfigurationFile
        do {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            file = try decoder.decode(ConfigurationFile.self, from: data)
        } catch {
            throw ConfigurationError("configuration file \(source) is not valid: \(Self.explain(error))")
        }
        if let key = firstNUL(in: data) {
            throw ConfigurationError("configuration file \(source): \(key) contains a NUL byte (\\u0000); no setting may hold one")
        }
        try WorkerConfiguration.checkAppCount(file.apps?.count ?? 0)
        try WorkerConfiguration.checkUniqueNames(file.apps ?? [])
        return file
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
    var fcmCredentialsFile: String?
    var fcmProjectId: String?
    var fcmUrl: String?
    var vapidKeyFile: String?
    var vapidSubject: String?
    var webpushAllowedOrigins: String?
    var connections: Int?
    var ratePerConnection: Int?
    var ratePerApp: Int?
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
        let fcm = try fcmSettings(label: label)
        let webPush = try webPushSettings(label: label)
        let environment: APNsEnvironment
        switch self.environment ?? "production" {
        case "production": environment = .production
        case "development", "sandbox": environment = .development
        case let other: throw ConfigurationError("\(label): PGPUSH_APNS_ENV must be production or development, got \"\(other)\"")
        }
        let tokenParts = [teamId, keyId, keyFile].compactMap { $0 }
        let authentication: AppConfiguration.Authentication?
        switch (tokenParts.count, certFile) {
        case (3, nil):
            authentication = .token(teamID: teamId ?? "", keyID: keyId ?? "", keyFile: keyFile ?? "")
        case (0, let certificate?):
            authentication = .certificate(file: certificate, password: certPassword)
        case (0, nil) where fcm != nil || webPush != nil:
            authentication = nil
        case (0, nil):
            throw ConfigurationError("\(label): no credentials: set PGPUSH_TEAM_ID, PGPUSH_KEY_ID and PGPUSH_KEY_FILE "
                                     + "(APNs token auth), PGPUSH_CERT_FILE (APNs certificate auth), "
                                     + "PGPUSH_FCM_CREDENTIALS_FILE (FCM) or PGPUSH_VAPID_KEY_FILE with PGPUSH_VAPID_SUBJECT (Web Push)")
        case (_, nil):
            throw ConfigurationError("\(label): token auth needs all of PGPUSH_TEAM_ID, PGPUSH_KEY_ID and PGPUSH_KEY_FILE")
        default:
            throw ConfigurationError("\(label): choose token auth (PGPUSH_KEY_FILE) or certificate auth (PGPUSH_CERT_FILE), not both")
        }
        // The bundle id is APNs's: an app without APNs credentials needs none.
        let bundleID = topic ?? ""
        if authentication != nil, bundleID.isEmpty {
            throw ConfigurationError("\(label): the bundle id is missing (PGPUSH_TOPIC, or \"topic\" in the file)")
        }
        var connection = ConnectionSettings()
        if let connections { connection.connections = connections }
        if let ratePerConnection { connection.ratePerConnection = ratePerConnection }
        if let (setting, problem) = connection.problem() { throw ConfigurationError("\(label): \(setting): \(problem)") }
        if let ratePerApp, !(0...WorkerConfiguration.maximumRatePerApp).contains(ratePerApp) {
            throw ConfigurationError("\(label): rate per app (PGPUSH_RATE_PER_APP): must be from 0 (none) to "
                                     + "\(WorkerConfiguration.maximumRatePerApp) requests/s, got \(ratePerApp)")
        }
        if let apnsUrl, !apnsUrl.hasPrefix("https://") {
            throw ConfigurationError("\(label): PGPUSH_APNS_URL must start with https:// (TLS is always on), got \"\(apnsUrl)\"")
        }
        return AppConfiguration(name: name, bundleID: bundleID, environment: environment, apnsURL: apnsUrl, caFile: caFile,
                                authentication: authentication, fcm: fcm, webPush: webPush, connections: connection.connections,
                                ratePerConnection: connection.ratePerConnection ?? RateCap.standardPerConnection,
                                ratePerApp: ratePerApp ?? 0,
                                retry: try (retry ?? FileRetry()).validated(app: name),
                                skipKnownInvalidTokens: skipKnownInvalidTokens ?? true)
    }
}

extension FileApp {
    /// The app's FCM settings, or nil when it has no service-account file. The project id
    /// and URL without the file are a mistake, not a choice.
    func fcmSettings(label: String) throws(ConfigurationError) -> AppConfiguration.FCM? {
        guard let file = fcmCredentialsFile, !file.isEmpty else {
            if fcmProjectId != nil || fcmUrl != nil {
                throw ConfigurationError("\(label): PGPUSH_FCM_PROJECT_ID and PGPUSH_FCM_URL need PGPUSH_FCM_CREDENTIALS_FILE")
            }
            return nil
        }
        if let fcmUrl, !fcmUrl.hasPrefix("https://") {
            throw ConfigurationError("\(label): PGPUSH_FCM_URL must start with https:// (TLS is always on), got \"\(fcmUrl)\"")
        }
        return AppConfiguration.FCM(credentialsFile: file, projectID: fcmProjectId.flatMap { $0.isEmpty ? nil : $0 }, url: fcmUrl)
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

extension FileApp {
    /// The app's Web Push settings, or nil when it has no VAPID key. A key needs a subject
    /// (push services use it to reach the sender); a subject or allow-list without a key is a
    /// mistake, not a choice.
    func webPushSettings(label: String) throws(ConfigurationError) -> AppConfiguration.WebPush? {
        guard let file = vapidKeyFile, !file.isEmpty else {
            if vapidSubject != nil || webpushAllowedOrigins != nil {
                throw ConfigurationError("\(label): PGPUSH_VAPID_SUBJECT and PGPUSH_WEBPUSH_ALLOWED_ORIGINS need PGPUSH_VAPID_KEY_FILE")
            }
            return nil
        }
        guard let subjectText = vapidSubject, !subjectText.isEmpty else {
            throw ConfigurationError("\(label): PGPUSH_VAPID_KEY_FILE needs PGPUSH_VAPID_SUBJECT (a mailto: or https: contact)")
        }
        let subject: VAPIDSubject
        do {
            subject = try VAPIDSubject(subjectText)
        } catch {
            throw ConfigurationError("\(label): PGPUSH_VAPID_SUBJECT: \(error)")
        }
        var allowed = AllowedOrigins.publicPushServices
        if let webpushAllowedOrigins {
            do {
                allowed = try AllowedOrigins(webpushAllowedOrigins)
            } catch {
                throw ConfigurationError("\(label): PGPUSH_WEBPUSH_ALLOWED_ORIGINS: \(error)")
            }
        }
        return AppConfiguration.WebPush(vapidKeyFile: file, vapidSubject: subject, allowedOrigins: allowed)
    }
}
