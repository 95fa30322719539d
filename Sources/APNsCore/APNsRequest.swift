import Foundation
import PGPushCore

/// A validated notification in APNs's terms: who gets it (one device, or a broadcast
/// channel of the app), its push type, topic, priority, expiration, collapse id and
/// apns-id, and the compact JSON body. How that is written as an HTTP/2 request is
/// the APNs client's business.
///
/// A broadcast carries no collapse id (validation refuses one) and always an expiration
/// and a priority, which APNs requires for it.
///
/// The provider token is not part of it: one token is shared by many requests and
/// replaced every ~50 minutes, so the sender adds it when the request is written.
package struct APNsRequest: Equatable, Sendable {
    /// Who gets it: one device, or every device subscribed to a broadcast channel.
    package enum Recipient: Equatable, Sendable {
        case device(DeviceToken)
        /// The channel id as APNs gave it (base64).
        case channel(String)
    }

    package let notificationID: Int64
    package let recipient: Recipient
    package let pushType: PushType
    package let priority: APNsPriority
    /// The topic of a device push; for a broadcast, the bundle id of the app whose
    /// channel it goes to.
    package let topic: String
    /// The row named its own `topic`: an answer about the topic is then the row's fault.
    package let topicIsExplicit: Bool
    package let apnsID: UUID
    /// Absolute UNIX seconds, 0 meaning "try once, store nothing"; nil leaves APNs's
    /// default storage policy.
    package let expiration: Int64?
    package let collapseID: String?
    /// The compact JSON body.
    package let body: [UInt8]
}
