import APNsClient
import Foundation
import HTTP2TLS

/// Builds one `APNsClient` per configured app: loads its key or certificate
/// and checks them before the worker connects anywhere.
public enum APNsSenderFactory {
    /// `keyLog`: every client's TLS secrets go there (`SSLKEYLOGFILE`); nil: nowhere.
    public static func makeSenders(for apps: [AppConfiguration], keyLog: TLSKeyLog? = nil,
                                   now: Date = Date()) throws(ConfigurationError) -> [String: any NotificationSender] {
        var senders: [String: any NotificationSender] = [:]
        for app in apps {
            senders[app.name] = try makeClient(for: app, keyLog: keyLog, now: now)
        }
        return senders
    }

    public static func makeClient(for app: AppConfiguration, keyLog: TLSKeyLog? = nil,
                                  now: Date = Date()) throws(ConfigurationError) -> APNsClient {
        let label = "app \"\(app.name)\""
        let endpoint: APNsEndpoint
        do {
            if let url = app.apnsURL {
                endpoint = try APNsEndpoint(baseURL: url)
            } else {
                endpoint = try APNsEndpoint(environment: app.environment == .production ? .production : .development)
            }
        } catch {
            throw ConfigurationError("\(label): PGPUSH_APNS_URL: \(error)")
        }
        let authentication: APNsAuthentication
        switch app.authentication {
        case .token(let teamID, let keyID, let keyFile):
            do {
                let signer = try ProviderTokenSigner(keyFile: keyFile, keyID: keyID, teamID: teamID)
                authentication = .token(ProviderTokenCache(signer: signer))
            } catch {
                throw ConfigurationError("\(label): token auth: \(error)")
            }
        case .certificate(let file, let password):
            do {
                let identity = try ClientIdentity.load(path: file, password: password)
                try identity.validate(now: now)
                authentication = .certificate(identity)
            } catch {
                throw ConfigurationError("\(label): certificate auth (PGPUSH_CERT_FILE): \(error)")
            }
        }
        var configuration = APNsClientConfiguration(appName: app.name, bundleID: app.bundleID, endpoint: endpoint,
                                                    authentication: authentication)
        configuration.extraCAFile = app.caFile
        configuration.tlsKeyLog = keyLog
        configuration.connections = app.connections
        configuration.ratePerConnection = app.ratePerConnection == 0 ? nil : app.ratePerConnection
        do {
            return try APNsClient(configuration: configuration)
        } catch {
            throw ConfigurationError(error.description)
        }
    }
}
