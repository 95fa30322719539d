import Foundation

/// One row of `pgpush.notifications` as the worker reads it, not yet validated.
/// Fields hold what the row says, so that anything SQL could not reject is refused by
/// the row's service (APNsCore's `validated`, FCM's `FCMMessage`) with a stable
/// `last_reason` instead of becoming a request bound to fail.
///
/// Named `PushNotification` rather than `Notification` so it does not collide
/// with Foundation's `Notification` in files that import both.
package struct PushNotification: Equatable, Sendable {
    package var id: Int64
    /// Which configured app sends it.
    package var app: String
    /// The service it goes to (`service` column).
    package var service: Service
    /// Hex as inserted, any case; empty on a channel or Web Push row.
    package var deviceToken: String
    /// `channel_id`: the broadcast channel the row goes to instead of a device.
    package var channelID: String?
    /// `subscription`, a Web Push row's target: the browser's `PushSubscription` JSON as stored.
    package var subscription: [UInt8]?
    /// `push_type` text, e.g. `"alert"`.
    package var pushType: String
    /// nil derives the push type's default.
    package var priority: Int?
    /// nil derives the app's bundle id plus the push type's suffix.
    package var topic: String?
    /// The JSON body as stored (jsonb text output, with its spaces).
    package var payload: [UInt8]
    package var collapseID: String?
    /// Absolute UNIX seconds for `apns-expiration` (from `expires_at`).
    package var expiration: Int64?
    /// `deliver_once`: true sends `apns-expiration: 0` (APNs tries once and stores
    /// nothing); nil derives it from the push type (true for pushtotalk only).
    package var deliverOnce: Bool?
    package var apnsID: UUID
    /// Which of the app's rows go first, in the claim and while waiting for a connection.
    package var lane: Lane

    package init(
        id: Int64, app: String = "default", service: Service = .apns, deviceToken: String, pushType: String = "alert",
        priority: Int? = nil, topic: String? = nil, payload: [UInt8], collapseID: String? = nil,
        expiration: Int64? = nil, deliverOnce: Bool? = nil, apnsID: UUID = UUID(), channelID: String? = nil,
        subscription: [UInt8]? = nil, lane: Lane = .unnamed
    ) {
        self.id = id
        self.app = app
        self.service = service
        self.deviceToken = deviceToken
        self.pushType = pushType
        self.priority = priority
        self.topic = topic
        self.payload = payload
        self.collapseID = collapseID
        self.expiration = expiration
        self.deliverOnce = deliverOnce
        self.apnsID = apnsID
        self.channelID = channelID
        self.subscription = subscription
        self.lane = lane
    }
}
