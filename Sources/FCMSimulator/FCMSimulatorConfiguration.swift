import Foundation
import PushCrypto

/// What the FCM simulator accepts and how it misbehaves on purpose.
public struct FCMSimulatorConfiguration: Sendable {
    /// The project in `/v1/projects/<project>/messages:send`.
    public var projectID: String
    /// The one service account whose assertions the token endpoint accepts.
    public var clientEmail: String
    public var privateKeyID: String
    public var publicKey: RS256PublicKey
    /// Seconds an access token lives (`expires_in`; Google's are 3599).
    public var accessTokenLifetime: Int = 3599
    /// How far an assertion's `iat` may be from the simulator's clock, as Google allows some skew.
    public var allowedClockSkew: TimeInterval = 300
    /// Registration tokens with a fixed answer; any other token is delivered.
    public var tokenFates: [String: TokenFate] = [:]
    public var faults = FCMFaults()
    public var host = "127.0.0.1"
    public var port = 0

    /// A registration token FCM answers with an error.
    public enum TokenFate: String, Sendable, CaseIterable {
        /// 404 NOT_FOUND, UNREGISTERED: the app was uninstalled or the token expired.
        case unregistered
        /// 400 INVALID_ARGUMENT naming `message.token`: not a registration token.
        case invalid
        /// 403 PERMISSION_DENIED, SENDER_ID_MISMATCH: the token belongs to another project.
        case senderIDMismatch
        /// 401 UNAUTHENTICATED, THIRD_PARTY_AUTH_ERROR: the APNs or web credentials in Firebase were refused.
        case thirdPartyAuthError
    }

    public init(projectID: String, clientEmail: String, privateKeyID: String, publicKey: RS256PublicKey) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.publicKey = publicKey
    }
}

/// Faults the simulator injects, each while set.
public struct FCMFaults: Sendable, Equatable {
    /// Every `n`th send (counting from 1) answers 503 UNAVAILABLE with `Retry-After: retryAfterSeconds`.
    public var unavailableEvery: Int?
    /// Every `n`th send answers 500 INTERNAL.
    public var internalErrorEvery: Int?
    /// Every `n`th send answers 429 RESOURCE_EXHAUSTED, QUOTA_EXCEEDED, with `Retry-After`.
    public var quotaExceededEvery: Int?
    public var retryAfterSeconds: Int = 1
    /// The token endpoint refuses every assertion (400 invalid_grant), as for a deleted key.
    public var refuseAssertions = false
    /// Every access token is refused by `messages:send` (401 UNAUTHENTICATED, no FcmError).
    public var refuseAccessTokens = false
    /// `messages:send` answers 403 PERMISSION_DENIED, as when the FCM API is not enabled.
    public var permissionDenied = false

    public init() {}
}
