import APNsCore
import PGPushCore
import PushCrypto

/// How an app proves itself to APNs.
package enum APNsAuthentication: Sendable {
    /// `authorization: bearer <jwt>` from a cache shared by every connection of the key,
    /// so a JWT is signed once per ~50 minutes however many connections there are.
    case token(ProviderTokenCache)
    /// A TLS client certificate; requests carry no `authorization` header.
    case certificate(ClientIdentity)

    /// The core's view, for `PushNotification.validated(bundleID:authentication:)`.
    package var method: AuthenticationMethod {
        switch self {
        case .token: return .token
        case .certificate: return .certificate
        }
    }
}
