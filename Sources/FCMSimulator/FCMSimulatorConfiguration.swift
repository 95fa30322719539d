import Foundation
import PushCrypto

/// What the FCM simulator accepts and how it misbehaves on purpose.
package struct FCMSimulatorConfiguration: Sendable {
    /// The project in `/v1/projects/<project>/messages:send`.
    package var projectID: String
    /// The one service account whose assertions the token endpoint accepts.
    package var clientEmail: String
    package var privateKeyID: String
    package var publicKey: RS256PublicKey
    /// Seconds an access token lives (`expires_in`; Google's are 3599).
    package var accessTokenLifetime: Int = 3599
    /// How far an assertion's `iat` may be from the simulator's clock, as Google allows some skew.
    package var allowedClockSkew: TimeInterval = 300
    /// Registration tokens with a fixed answer; any other token is delivered.
    package var tokenFates: [String: TokenFate] = [:]
    package var faults = FCMFaults()
    package var host = "127.0.0.1"
    package var port = 0

    /// A registration token FCM answers with an error.
    package enum TokenFate: String, Sendable, CaseIterable {
        /// 404 NOT_FOUND, UNREGISTERED: the app was uninstalled or the token expired.
        case unregistered
        /// 400 INVALID_ARGUMENT naming `message.token`: not a registration token.
        case invalid
        /// 403 PERMISSION_DENIED, SENDER_ID_MISMATCH: the token belongs to another project.
        case senderIDMismatch
        /// 401 UNAUTHENTICATED, THIRD_PARTY_AUTH_ERROR: the APNs or web credentials in Firebase were refused.
        case thirdPartyAuthError
    }

    package init(projectID: String, clientEmail: String, privateKeyID: String, publicKey: RS256PublicKey) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.publicKey = publicKey
    }
}

/// Faults the simulator injects, each while set.
package struct FCMFaults: Sendable, Equatable {
    /// Every `n`th send (counting from 1) answers 503 UNAVAILABLE with `Retry-After: retryAfterSeconds`.
    package var unavailableEvery: Int?
    /// Every `n`th send answers 500 INTERNAL.
    package var internalErrorEvery: Int?
    /// Every `n`th send answers 429 RESOURCE_EXHAUSTED, QUOTA_EXCEEDED, with `Retry-After`.
    package var quotaExceededEvery: Int?
    package var retryAfterSeconds: Int = 1
    /// The token endpoint refuses every assertion (400 invalid_grant), as for a deleted key.
    package var refuseAssertions = false
    /// Every access token is refused by `messages:send` (401 UNAUTHENTICATED, no FcmError).
    package var refuseAccessTokens = false
    /// The first access token issued is refused by `messages:send` (401 UNAUTHENTICATED, no
    /// FcmError), as one revoked before it expired; the ones after it are good.
    package var revokeFirstAccessToken = false
    /// `messages:send` answers 403 PERMISSION_DENIED, as when the FCM API is not enabled.
    package var permissionDenied = false

    package init() {}
}
