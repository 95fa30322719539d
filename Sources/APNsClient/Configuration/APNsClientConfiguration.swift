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
    /// Connections, rate cap, timeouts and reconnect back-off, as for every service.
    package var connection = ConnectionSettings()

    package init(appName: String, bundleID: String, endpoint: APNsEndpoint, authentication: APNsAuthentication) {
        self.appName = appName
        self.bundleID = bundleID
        self.endpoint = endpoint
        self.authentication = authentication
    }

    package func validate() throws(APNsClientConfigurationError) {
        let trimmedApp = appName.trimmingCharacters(in: .whitespaces)
        guard !trimmedApp.isEmpty else { throw .init(setting: "app name", "must not be empty") }
        guard !bundleID.isEmpty else { throw .init(setting: "bundle id (PGPUSH_TOPIC)", "must not be empty", app: appName) }
        guard bundleID.utf8.count <= 255, !bundleID.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw .init(setting: "bundle id (PGPUSH_TOPIC)", "must be at most 255 bytes without spaces", app: appName)
        }
        if let (setting, problem) = connection.problem() { throw .init(setting: setting, problem, app: appName) }
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
