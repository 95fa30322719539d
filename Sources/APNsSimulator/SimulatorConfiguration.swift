import APNsCore
import Foundation
import PGPushCore

/// How an `APNsSimulator` listens, authenticates and misbehaves.
package struct SimulatorConfiguration: Sendable {
    /// Where the server certificate comes from.
    package enum ServerCertificate: Sendable, Equatable {
        /// A throwaway CA and a localhost certificate made at start-up. The CA's PEM is
        /// written to `caOutputPath`, or to a fresh temporary file when nil; either way
        /// `APNsSimulator.caCertificatePath` names it (for `PGPUSH_CA_FILE`).
        case generated(caOutputPath: String?)
        /// PEM files: the certificate chain (leaf first) and its private key.
        case files(certificateChain: String, privateKey: String)
    }

    /// How clients prove who they are.
    package enum Authentication: Sendable {
        /// JWT provider tokens checked against this key. The connection allows one
        /// stream until the first valid JWT, as APNs does.
        case token(ProviderTokenKey)
        /// TLS client certificates. With a CA file only certificates it issued are accepted
        /// at the handshake; without one any certificate is taken and judged by its subject
        /// (its `UID`, else its `CN`, is the app's topic).
        case certificate(trustedCAFile: String?)
    }

    /// `development` adds `apns-unique-id` (a fresh UUID) to every answer, errors included,
    /// as the sandbox does; `production` never sends it.

    package var host = "127.0.0.1"
    /// 0 picks a free port.
    package var port = 0
    package var serverCertificate = ServerCertificate.generated(caOutputPath: nil)
    package var authentication: Authentication
    /// With token authentication, more keys accepted beside the configured one (a rotation).
    package var otherTokenKeys: [ProviderTokenKey] = []
    /// The app's bundle id: topics must be it plus the push type's suffix. nil accepts any topic.
    package var bundleID: String?
    /// SETTINGS_MAX_CONCURRENT_STREAMS once a connection is authenticated.
    package var maxConcurrentStreams = 1000
    package var environment = APNsEnvironment.development
    package var faults = FaultPlan()
    /// Broadcast capability of the app: false answers every broadcast and channel request
    /// 400 FeatureNotEnabled, as APNs does until it is enabled on developer.apple.com.
    package var broadcastEnabled = true
    /// Channels per app that create allows (APNs: 10,000 per app and environment).
    package var channelLimit = 10_000
    /// Channels that exist from the start: id → message storage policy (0 or 1).
    package var channels: [String: Int] = [:]
    /// JSON-lines log of every request, when set.
    package var logPath: String?
    /// The wall clock for JWT ages and 410 timestamps (tests move it).
    package var clock: @Sendable () -> Date = { Date() }

    package init(authentication: Authentication) {
        self.authentication = authentication
    }
}
