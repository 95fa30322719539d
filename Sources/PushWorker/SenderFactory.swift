import APNsClient
import FCMClient
import Foundation
import HTTP2TLS
import PGPushCore
import PushCrypto
import PushTransport
import WebPushClient

/// Builds the senders of every configured app, one per service it has credentials for:
/// loads and checks each key, certificate and service-account file before the worker
/// connects anywhere.
package enum SenderFactory {
    /// `keyLog`: every client's TLS secrets go there (`SSLKEYLOGFILE`); nil: nowhere.
    package static func makeSenders(for apps: [AppConfiguration], keyLog: TLSKeyLog? = nil,
                                   now: Date = Date()) throws(ConfigurationError) -> [any NotificationSender] {
        var senders: [any NotificationSender] = []
        for app in apps {
            if app.authentication != nil {
                senders.append(APNsSender(client: try makeClient(for: app, keyLog: keyLog, now: now)))
            }
            if app.fcm != nil {
                senders.append(try makeFCMSender(for: app, keyLog: keyLog))
            }
            if app.webPush != nil {
                senders.append(try makeWebPushSender(for: app, keyLog: keyLog))
            }
        }
        return senders
    }

    /// The app's FCM sender: its service-account file read and checked (an RSA key of at
    /// least 2,048 bits that can sign), the project and URL set.
    package static func makeFCMSender(for app: AppConfiguration, keyLog: TLSKeyLog? = nil) throws(ConfigurationError) -> FCMSender {
        let label = "app \"\(app.name)\""
        guard let fcm = app.fcm else { throw ConfigurationError("\(label): no FCM credentials (PGPUSH_FCM_CREDENTIALS_FILE)") }
        let account: ServiceAccountKey
        do {
            account = try ServiceAccountKey(contentsOfFile: fcm.credentialsFile)
        } catch {
            throw ConfigurationError("\(label): PGPUSH_FCM_CREDENTIALS_FILE: \(error)")
        }
        var configuration = FCMSenderConfiguration(appName: app.name, account: account, projectID: fcm.projectID)
        configuration.url = fcm.url ?? FCMSenderConfiguration.standardURL
        configuration.extraCAFile = app.caFile
        configuration.tlsKeyLog = keyLog
        configuration.connection = app.connectionSettings
        do {
            return try FCMSender(configuration: configuration)
        } catch {
            throw ConfigurationError(error.description)
        }
    }

    /// The app's Web Push sender: its VAPID key read and checked (a P-256 key that can sign),
    /// with its subject and allowed origins.
    package static func makeWebPushSender(for app: AppConfiguration, keyLog: TLSKeyLog? = nil) throws(ConfigurationError) -> WebPushSender {
        let label = "app \"\(app.name)\""
        guard let webPush = app.webPush else { throw ConfigurationError("\(label): no VAPID key (PGPUSH_VAPID_KEY_FILE)") }
        let signer: VAPIDSigner
        do {
            let key = try ES256PrivateKey(contentsOfFile: webPush.vapidKeyFile)
            signer = try VAPIDSigner(key: key, subject: webPush.vapidSubject)
            _ = try signer.sign(audience: "https://fcm.googleapis.com", now: Date())
        } catch {
            throw ConfigurationError("\(label): PGPUSH_VAPID_KEY_FILE: \(error)")
        }
        var configuration = WebPushSenderConfiguration(appName: app.name, signer: signer)
        configuration.allowedOrigins = webPush.allowedOrigins
        configuration.extraCAFile = app.caFile
        configuration.tlsKeyLog = keyLog
        configuration.connection = app.connectionSettings
        do {
            return try WebPushSender(configuration: configuration)
        } catch {
            throw ConfigurationError(error.description)
        }
    }

    package static func makeClient(for app: AppConfiguration, keyLog: TLSKeyLog? = nil,
                                  now: Date = Date()) throws(ConfigurationError) -> APNsClient {
        let label = "app \"\(app.name)\""
        let endpoint: APNsEndpoint
        do {
            if let url = app.apnsURL {
                endpoint = try APNsEndpoint(baseURL: url)
            } else {
                endpoint = try APNsEndpoint(environment: app.environment)
            }
        } catch {
            throw ConfigurationError("\(label): PGPUSH_APNS_URL: \(error)")
        }
        let authentication = try authentication(for: app, now: now)
        var configuration = APNsClientConfiguration(appName: app.name, bundleID: app.bundleID, endpoint: endpoint,
                                                    authentication: authentication)
        configuration.extraCAFile = app.caFile
        configuration.tlsKeyLog = keyLog
        configuration.connection = app.connectionSettings
        do {
            return try APNsClient(configuration: configuration)
        } catch {
            throw ConfigurationError(error.description)
        }
    }

    /// A client of Apple's channel management API with the app's credentials: Apple's host for
    /// the app's environment, or `channelsURL` (`PGPUSH_APNS_CHANNELS_URL`, e.g. the simulator).
    package static func makeChannelManagementClient(for app: AppConfiguration, channelsURL: String?,
                                                   retry: RetryConfiguration? = nil,
                                                   now: Date = Date()) throws(ConfigurationError) -> ChannelManagementClient {
        let endpoint: APNsEndpoint
        if let channelsURL {
            do {
                endpoint = try APNsEndpoint(baseURL: channelsURL)
            } catch {
                throw ConfigurationError("app \"\(app.name)\": PGPUSH_APNS_CHANNELS_URL: \(error)")
            }
        } else {
            endpoint = app.environment == .production ? .channelManagementProduction : .channelManagementDevelopment
        }
        do {
            return try ChannelManagementClient(endpoint: endpoint, bundleID: app.bundleID, authentication: try authentication(for: app, now: now),
                                               extraCAFile: app.caFile, proxy: app.proxy, retry: retry ?? app.retry)
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError("app \"\(app.name)\": \(error)")
        }
    }

    /// The app's key (a provider token cache) or certificate, checked.
    static func authentication(for app: AppConfiguration, now: Date) throws(ConfigurationError) -> APNsAuthentication {
        let label = "app \"\(app.name)\""
        switch app.authentication {
        case nil:
            throw ConfigurationError("\(label): no APNs credentials (PGPUSH_KEY_FILE or PGPUSH_CERT_FILE)")
        case .token(let teamID, let keyID, let keyFile):
            do {
                let signer = try ProviderTokenSigner(keyFile: keyFile, keyID: keyID, teamID: teamID)
                return .token(ProviderTokenCache(signer: signer))
            } catch {
                throw ConfigurationError("\(label): token auth: \(error)")
            }
        case .certificate(let file, let password):
            do {
                let identity = try ClientIdentity.load(path: file, password: password)
                try identity.validate(now: now)
                return .certificate(identity)
            } catch {
                throw ConfigurationError("\(label): certificate auth (PGPUSH_CERT_FILE): \(error)")
            }
        }
    }
}
