/// Why a notification cannot be sent, found before spending an APNs request
/// ("what only the worker can tell becomes status `failed` with a clear
/// `last_reason`"). Where APNs has a reason for the same fault, the same spelling
/// is used so `last_reason` reads alike whether pgpush or APNs caught it.
public struct ValidationFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// Stable strings for the `last_reason` column; public API, never renamed.
    public enum Reason: String, CaseIterable, Sendable {
        case invalidPushType = "InvalidPushType"
        case badDeviceToken = "BadDeviceToken"
        case badPriority = "BadPriority"
        case missingTopic = "MissingTopic"
        case badTopic = "BadTopic"
        /// location and liveactivity on a certificate-authenticated app.
        case tokenAuthenticationRequired = "TokenAuthenticationRequired"
        /// Not JSON, not an object, or nested too deeply.
        case invalidPayload = "InvalidPayload"
        case payloadTooLarge = "PayloadTooLarge"
        /// A background push without `aps.content-available: 1`, or with alert/badge/sound.
        case badBackgroundPayload = "BadBackgroundPayload"
        case badCollapseID = "BadCollapseId"
        case badExpirationDate = "BadExpirationDate"
    }

    public let reason: Reason
    /// A sentence for people; never contains payload content or secrets.
    public let message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason.rawValue): \(message)" }
}
