import Foundation
import HTTP2TLS
import PGPushCore
import PushTransport

/// Everything one app's APNs client needs; checked as a whole by `validate()` (and by
/// `APNsClient.init`) so a bad setting stops start-up with an error naming it.
package struct APNsClientConfiguration: Sendable {
    /// The app's name in the queue (`notifications.app`); used in logs and errors.
    package var appName: String
    /// The bundle id: the topic base, e.g. `com.example.app`.
    package var bundleID: String
    package var endpoint: APNsEndpoint
    package var authentication: APNsAuthentication
    /// Extra PEM trust anchors, added to the system trust store (never replacing
    /// verification): the simulator's CA in tests and the demo.
    package var extraCAFile: String?
    /// Where the connections' TLS secrets are appended for reading a capture; nil: nowhere.
    package var tlsKeyLog: TLSKeyLog?
    /// HTTP/2 connections kept open for this app.
    package var connections: Int = 4
    /// Requests per second per connection, over any one-second window; nil or 0: no cap
    /// (benchmarks). Sends are paced in tenths of a second (a tenth of the rate each) so
    /// that APNs never counts more in a second. A connection whose answers are more than
    /// 10% 429 TooManyRequests runs at half this rate for a while (see
    /// `TooManyRequestsThrottle`); an uncapped one does not.
    package var ratePerConnection: Int? = RateCap.standardPerConnection
    /// From writing a request to its answer; also how long `send` waits for a connection.
    package var requestTimeout: Duration = .seconds(10)
    /// TCP connect plus TLS handshake.
    package var connectTimeout: Duration = .seconds(10)
    package var reconnectBackoff: ReconnectBackoff = .standard

    package static let maximumConnections = 64
    package static let maximumRatePerConnection = 1_000_000

    package init(appName: String, bundleID: String, endpoint: APNsEndpoint, authentication: APNsAuthentication) {
        self.appName = appName
        self.bundleID = bundleID
        self.endpoint = endpoint
        self.authentication = authentication
    }

    /// The cap as the rate limiter takes it: nil when unlimited.
    package var effectiveRatePerConnection: Int? { RateCap.perConnection(ratePerConnection) }

    package func validate() throws(APNsClientConfigurationError) {
        let trimmedApp = appName.trimmingCharacters(in: .whitespaces)
        guard !trimmedApp.isEmpty else { throw .init(setting: "app name", "must not be empty") }
        guard !bundleID.isEmpty else { throw .init(setting: "bundle id (PGPUSH_TOPIC)", "must not be empty", app: appName) }
        guard bundleID.utf8.count <= 255, !bundleID.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw .init(setting: "bundle id (PGPUSH_TOPIC)", "must be at most 255 bytes without spaces", app: appName)
        }
        guard (1...Self.maximumConnections).contains(connections) else {
            throw .init(setting: "connections (PGPUSH_CONNECTIONS)",
                        "must be from 1 to \(Self.maximumConnections), got \(connections)", app: appName)
        }
        if let ratePerConnection {
            guard (0...Self.maximumRatePerConnection).contains(ratePerConnection) else {
                throw .init(setting: "rate per connection (PGPUSH_RATE_PER_CONNECTION)",
                            "must be from 0 (no cap) to \(Self.maximumRatePerConnection) requests/s, got \(ratePerConnection)", app: appName)
            }
        }
        guard requestTimeout > .zero, requestTimeout <= .seconds(600) else {
            throw .init(setting: "request timeout", "must be more than 0 and at most 600 s, got \(requestTimeout)", app: appName)
        }
        guard connectTimeout > .zero, connectTimeout <= .seconds(600) else {
            throw .init(setting: "connect timeout", "must be more than 0 and at most 600 s, got \(connectTimeout)", app: appName)
        }
        guard reconnectBackoff.initial > .zero, reconnectBackoff.maximum >= reconnectBackoff.initial else {
            throw .init(setting: "reconnect backoff", "initial delay must be more than 0 and at most the maximum", app: appName)
        }
        if let extraCAFile {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: extraCAFile, isDirectory: &isDirectory), !isDirectory.boolValue else {
                throw .init(setting: "CA file (PGPUSH_CA_FILE)", "\"\(extraCAFile)\" does not exist or is not a file", app: appName)
            }
            guard FileManager.default.isReadableFile(atPath: extraCAFile) else {
                throw .init(setting: "CA file (PGPUSH_CA_FILE)", "\"\(extraCAFile)\" is not readable", app: appName)
            }
        }
        if case .certificate(let identity) = authentication {
            do {
                try identity.validate()
            } catch {
                throw .init(setting: "certificate (PGPUSH_CERT_FILE)", error.description, app: appName)
            }
        }
    }
}

/// A configuration setting that cannot work; `description` names the setting and the app.
package struct APNsClientConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    package let setting: String
    package let problem: String
    package let app: String?

    package init(setting: String, _ problem: String, app: String? = nil) {
        self.setting = setting
        self.problem = problem
        self.app = app
    }

    package var description: String {
        let prefix = app.map { "app \"\($0)\": " } ?? ""
        return "\(prefix)\(setting): \(problem)"
    }
}
