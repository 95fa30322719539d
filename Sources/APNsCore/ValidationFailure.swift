import PGPushCore

/// Why a notification cannot be sent, found before spending an APNs request
/// ("what only the worker can tell becomes status `failed` with a clear
/// `last_reason`"). Where APNs has a reason for the same fault, the same spelling
/// is used so `last_reason` reads alike whether pgpush or APNs caught it.
package struct ValidationFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// Stable strings for the `last_reason` column; public API, never renamed.
    package enum Reason: String, CaseIterable, Sendable {
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
        /// A channel id that is not base64 (APNs's spelling for the same fault).
        case badChannelID = "BadChannelId"
        /// A Live Activity push without `aps.event`, or with one other than start, update, end.
        case liveActivityMissingEvent = "LiveActivityMissingEvent"
        /// A Live Activity push without a numeric `aps.timestamp`.
        case liveActivityMissingTimestamp = "LiveActivityMissingTimestamp"
        /// A Live Activity start or update without an `aps.content-state` object.
        case liveActivityMissingContentState = "LiveActivityMissingContentState"
        /// A Live Activity start without `aps.attributes-type` and an `aps.attributes` object.
        case liveActivityMissingAttributes = "LiveActivityMissingAttributes"
        /// A Live Activity start without `aps.alert`.
        case liveActivityMissingAlert = "LiveActivityMissingAlert"
        /// `aps.event: start` on a channel row: only a device push starts an activity.
        case broadcastCannotStartLiveActivity = "BroadcastCannotStartLiveActivity"
    }

    package let reason: Reason
    /// A sentence for people; never contains payload content or secrets.
    package let message: String

    package init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    package var description: String { "\(reason.rawValue): \(message)" }
}
