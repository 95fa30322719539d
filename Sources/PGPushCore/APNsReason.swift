/// Every `reason` APNs documents for `/3/device`, with its status and what it
/// means for pgpush (apns-reference §4, Apple's table).
///
/// Choices worth knowing:
/// - Both `BadEnvironmentKeyIdInToken` (Apple's table) and
///   `BadEnvironmentKeyInToken` (what APNs actually sends) are listed.
/// - `ExpiredToken` is 410 now (it was 400 in Apple's 2023 table); classification
///   goes by reason, so either status gives the same class.
/// - `BadTopic`, `TopicDisallowed` and `MissingTopic` are app problems: the topic
///   normally comes from the app's configured bundle id, and every row of the app
///   would fail alike. A row with its own explicit topic is the exception, see
///   `ReasonCatalogue.classify`.
/// - `UnrelatedKeyIdInToken`, `Forbidden` and the environment-key reasons mean the
///   key does not fit the connection or environment: configuration, not the row.
/// - `IdleTimeout` means the request met a connection APNs was closing; nothing
///   is wrong with the notification, so it is retried like a lost response.
/// - `BadMessageId`, `BadPath`, `MethodNotAllowed`, `DuplicateHeaders`,
///   `MissingDeviceToken` and `PayloadEmpty` would be pgpush bugs (validation
///   rules them out); they fail the row so a bug cannot loop forever.
public enum APNsReason: String, CaseIterable, Sendable {
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

    /// The HTTP status APNs documents with this reason.
    public var status: Int {
        switch self {
        case .badCollapseID, .badDeviceToken, .badExpirationDate, .badMessageID, .badPriority, .badTopic,
             .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
             .missingTopic, .payloadEmpty, .topicDisallowed:
            400
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
             .missingProviderToken, .unrelatedKeyIDInToken, .badEnvironmentKeyIDInToken, .badEnvironmentKeyInToken:
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

    public var outcome: OutcomeClass {
        switch self {
        case .unregistered, .expiredToken, .badDeviceToken, .deviceTokenNotForTopic:
            .tokenInvalid
        case .invalidProviderToken, .missingProviderToken, .badCertificate, .badCertificateEnvironment, .forbidden,
             .unrelatedKeyIDInToken, .badEnvironmentKeyIDInToken, .badEnvironmentKeyInToken,
             .topicDisallowed, .badTopic, .missingTopic:
            .appMisconfigured
        case .expiredProviderToken: .refreshProviderToken
        case .tooManyProviderTokenUpdates: .signingBug
        case .tooManyRequests: .backOffTooManyRequests
        case .internalServerError, .serviceUnavailable, .shutdown, .idleTimeout: .retryServerError
        case .badCollapseID, .badExpirationDate, .badMessageID, .badPriority, .duplicateHeaders, .invalidPushType,
             .missingDeviceToken, .payloadEmpty, .badPath, .methodNotAllowed, .payloadTooLarge:
            .permanentFailure
        }
    }

    /// Whether the reason is about `apns-topic`, which a row may set itself.
    public var concernsTopic: Bool {
        self == .badTopic || self == .topicDisallowed
    }
}
