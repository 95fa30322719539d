import APNsClient
import FCMClient
import Foundation
import PushCrypto
import PushTransport
import WebPushClient

/// What identifies an app's credential for one service, in words fit for a log line: its key
/// id, certificate subject and expiry, service account or public key, never a secret; and a
/// fingerprint of its file's bytes, keyed per process, that says whether the file changed
/// and tells nothing of what it holds.
package struct CredentialFacts: Sendable, Equatable {
    package let app: String
    /// `apns`, `fcm` or `webpush`.
    package let service: String
    /// The setting that names the file (`key_file`, `cert_file`, `fcm_credentials_file`, `vapid_key_file`).
    package let setting: String
    /// What the log shows of it (key id, certificate expiry, …).
    package let identity: [String: String]
    let fingerprint: [UInt8]

    /// The facts of every credential the apps' senders were made from.
    package static func of(_ apps: [AppConfiguration], senders: [any NotificationSender]) -> [CredentialFacts] {
        var facts: [CredentialFacts] = []
        for app in apps {
            switch app.authentication {
            case .token(let teamID, let keyID, let keyFile):
                facts.append(CredentialFacts(app: app.name, service: "apns", setting: "key_file",
                                             identity: ["key_id": keyID, "team_id": teamID], file: keyFile))
            case .certificate(let file, let password):
                let identity = (try? ClientIdentity.load(path: file, password: password)).map {
                    ["certificate_subject": $0.subject, "certificate_not_after": $0.notAfter.formatted(.iso8601)]
                } ?? [:]
                facts.append(CredentialFacts(app: app.name, service: "apns", setting: "cert_file", identity: identity, file: file))
            case nil:
                break
            }
            if let fcm = app.fcm {
                let account = senders.lazy.compactMap { $0 as? FCMSender }.first { $0.app == app.name }?.configuration.account
                let identity = account.map { ["private_key_id": $0.privateKeyID, "client_email": $0.clientEmail] } ?? [:]
                facts.append(CredentialFacts(app: app.name, service: "fcm", setting: "fcm_credentials_file", identity: identity,
                                             file: fcm.credentialsFile))
            }
            if let webPush = app.webPush {
                let signer = senders.lazy.compactMap { $0 as? WebPushSender }.first { $0.app == app.name }?.configuration.signer
                let identity = signer.map { ["application_server_key": $0.publicKey] } ?? [:]
                facts.append(CredentialFacts(app: app.name, service: "webpush", setting: "vapid_key_file",
                                             identity: identity, file: webPush.vapidKeyFile))
            }
        }
        return facts
    }

    init(app: String, service: String, setting: String, identity: [String: String], file: String) {
        self.app = app
        self.service = service
        self.setting = setting
        self.identity = identity
        let bytes = FileManager.default.contents(atPath: file).map(Array.init) ?? []
        fingerprint = (try? HMACSHA256.code(key: Self.fingerprintKey, data: bytes)) ?? []
    }

    /// Random per process: a fingerprint compares files within one run and is no hash of a key.
    private static let fingerprintKey: [UInt8] = (0..<32).map { _ in UInt8.random(in: .min ... .max) }
}

/// What a reload changed, one entry per credential that is new, gone or different, and per
/// app whose other settings changed.
package enum ConfigurationChanges {
    package struct Change: Sendable, Equatable {
        package let app: String
        /// `added`, `removed`, `changed` (a credential), `settings` (anything else of the app).
        package let kind: String
        package let service: String?
        package let setting: String?
        package let identity: [String: String]

        /// The change as log fields: the app, what changed, and what identifies the credential now.
        package var fields: [(key: String, value: Any)] {
            var fields: [(key: String, value: Any)] = [("app", app), ("change", kind)]
            if let service { fields.append(("service", service)) }
            if let setting { fields.append(("setting", setting)) }
            for key in identity.keys.sorted() { fields.append((key, identity[key] ?? "")) }
            return fields
        }
    }

    package static func between(_ old: [AppConfiguration], _ oldFacts: [CredentialFacts],
                                and new: [AppConfiguration], _ newFacts: [CredentialFacts]) -> [Change] {
        var changes: [Change] = []
        let key = { (facts: CredentialFacts) in "\(facts.app)/\(facts.service)" }
        let before = Dictionary(oldFacts.map { (key($0), $0) }, uniquingKeysWith: { first, _ in first })
        let after = Dictionary(newFacts.map { (key($0), $0) }, uniquingKeysWith: { first, _ in first })
        for facts in newFacts {
            guard let previous = before[key(facts)] else {
                changes.append(Change(app: facts.app, kind: "added", service: facts.service, setting: facts.setting,
                                      identity: facts.identity))
                continue
            }
            if previous != facts {
                changes.append(Change(app: facts.app, kind: "changed", service: facts.service, setting: facts.setting,
                                      identity: facts.identity))
            }
        }
        for facts in oldFacts where after[key(facts)] == nil {
            changes.append(Change(app: facts.app, kind: "removed", service: facts.service, setting: facts.setting,
                                  identity: facts.identity))
        }
        let oldApps = Dictionary(old.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for app in new {
            guard let previous = oldApps[app.name], previous != app else { continue }
            // A difference no credential explains (a project id, allowed origins, a cap, a retry rule).
            let credentialChanged = changes.contains { $0.app == app.name }
            if previous.withoutCredentials != app.withoutCredentials || !credentialChanged {
                changes.append(Change(app: app.name, kind: "settings", service: nil, setting: nil, identity: [:]))
            }
        }
        return changes
    }
}

extension AppConfiguration {
    /// The app's settings other than its credentials (to tell a settings change from a new key).
    var withoutCredentials: AppConfiguration {
        var copy = self
        copy.authentication = nil
        copy.fcm = nil
        copy.webPush = nil
        return copy
    }
}
