import PGPushCore

/// Every `reason` APNs documents for `/3/device` and for broadcasts and channel
/// management, with the status Apple lists it under. What each means for a row is
/// `DeliveryPolicy`'s to say.
///
/// - Both `BadEnvironmentKeyIdInToken` (Apple's table) and
///   `BadEnvironmentKeyInToken` (what APNs actually sends) are listed.
/// - `ExpiredToken` is 410 now (it was 400 in Apple's 2023 table).
/// - `BadMessageId`, `BadPath`, `MethodNotAllowed`, `DuplicateHeaders`,
///   `MissingDeviceToken` and `PayloadEmpty` would be pgpush bugs (validation
///   rules them out).
package enum APNsReason: String, CaseIterable, Sendable {
    case badCollapseID = "BadCollapseId"
    case badDeviceToken = "BadDeviceToken"
    case badExpirationDate = "BadExpirationDate"
    case badMessageID = "BadMessageId"
    case badPriority = "BadPriority"
    case badTopic = "BadTopic"
    case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
    case duplicateHeaders = "DuplicateHeaders"
    case idleTimeout = "IdleTimeout"
    case invalidPushType = "InvalidPushType"
    case missingDeviceToken = "MissingDeviceToken"
    case missingTopic = "MissingTopic"
    case payloadEmpty = "PayloadEmpty"
    case topicDisallowed = "TopicDisallowed"
    case badCertificate = "BadCertificate"
    case badCertificateEnvironment = "BadCertificateEnvironment"
    case expiredProviderToken = "ExpiredProviderToken"
    case forbidden = "Forbidden"
    case invalidProviderToken = "InvalidProviderToken"
    case missingProviderToken = "MissingProviderToken"
    case unrelatedKeyIDInToken = "UnrelatedKeyIdInToken"
    case badEnvironmentKeyIDInToken = "BadEnvironmentKeyIdInToken"
    case badEnvironmentKeyInToken = "BadEnvironmentKeyInToken"
    case badPath = "BadPath"
    case methodNotAllowed = "MethodNotAllowed"
    case expiredToken = "ExpiredToken"
    case unregistered = "Unregistered"
    case payloadTooLarge = "PayloadTooLarge"
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
    case tooManyRequests = "TooManyRequests"
    case internalServerError = "InternalServerError"
    case serviceUnavailable = "ServiceUnavailable"
    case shutdown = "Shutdown"
    // Broadcasts and channel management.
    /// Broadcast is not enabled for the app (developer.apple.com, not Xcode).
    case featureNotEnabled = "FeatureNotEnabled"
    case missingChannelID = "MissingChannelId"
    /// Not base64, or too long.
    case badChannelID = "BadChannelId"
    /// The channel does not exist (never created, or deleted).
    case channelNotRegistered = "ChannelNotRegistered"
    /// An attribute the management API does not know in a JSON body.
    case badRequestParams = "BadRequestParams"
    /// A management request body that is not JSON.
    case badRequestPayload = "BadRequestPayload"
    case missingPushType = "MissingPushType"
    /// The bundle id in a broadcast's path is not covered by the provider token's team or the certificate.
    case topicMismatch = "TopicMismatch"
    /// The app already has as many channels as APNs allows in this environment.
    case cannotCreateChannelConfig = "CannotCreateChannelConfig"

    /// The HTTP status APNs documents with this reason.
    package var status: Int {
        switch self {
        case .badCollapseID, .badDeviceToken, .badExpirationDate, .badMessageID, .badPriority, .badTopic,
             .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
             .missingTopic, .payloadEmpty, .topicDisallowed, .featureNotEnabled, .missingChannelID, .badChannelID,
             .channelNotRegistered, .badRequestParams, .badRequestPayload, .missingPushType, .cannotCreateChannelConfig:
            400
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
             .missingProviderToken, .unrelatedKeyIDInToken, .badEnvironmentKeyIDInToken, .badEnvironmentKeyInToken,
             .topicMismatch:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .expiredToken, .unregistered: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        }
    }
}
