import Foundation

/// A validated notification in the shape APNs wants: `POST /3/device/<token>`, or for a
/// broadcast `POST /4/broadcasts/apps/<bundle id>`, with its headers and compact JSON body.
///
/// The JWT is not part of it: one token is shared by many requests and replaced
/// every ~50 minutes, so the sender passes it in when building the header list.
public struct APNsRequest: Equatable, Sendable {
    /// Who gets it: one device, or every device subscribed to a broadcast channel.
    public enum Recipient: Equatable, Sendable {
        case device(DeviceToken)
        /// The channel id as APNs gave it (base64).
        case channel(String)
    }

    public let notificationID: Int64
    public let recipient: Recipient
    public let pushType: PushType
    public let priority: APNsPriority
    /// The `apns-topic` of a device push; for a broadcast, the bundle id its path names
    /// (a broadcast carries no `apns-topic`).
    public let topic: String
    public let apnsID: UUID
    /// Absolute UNIX seconds; nil omits the header (APNs's default storage policy).
    public let expiration: Int64?
    public let collapseID: String?
    /// The compact JSON body.
    public let body: [UInt8]

    public var path: String {
        switch recipient {
        case .device(let token): "/3/device/\(token.hex)"
        case .channel: "/4/broadcasts/apps/\(topic)"
        }
    }

    /// The complete header list for this request, pseudo-headers first, each
    /// name once (APNs answers a repeated header with 400 DuplicateHeaders).
    ///
    /// `:scheme` and `:authority` are included because RFC 9113 §8.3.1 makes
    /// `:scheme` mandatory for a request, and a server (nghttp2 included) resets
    /// a stream without it.
    ///
    /// A broadcast names its channel in `apns-channel-id` (never in the path) and carries
    /// no `apns-topic` or `apns-collapse-id`; APNs requires its expiration and priority,
    /// which validation always sets for it. Its id header is `apns-request-id`.
    ///
    /// - Parameters:
    ///   - authority: the APNs host (and port when not 443), e.g. `api.push.apple.com`.
    ///   - providerToken: the JWT for token authentication; nil on a certificate connection.
    public func headerFields(authority: String, providerToken: String?) -> [HeaderField] {
        var fields: [HeaderField] = [
            HeaderField(name: ":method", value: "POST", neverIndex: false),
            HeaderField(name: ":scheme", value: "https", neverIndex: false),
            HeaderField(name: ":authority", value: authority, neverIndex: false),
            HeaderField(name: ":path", value: path, neverIndex: true),
        ]
        if let providerToken {
            fields.append(HeaderField(name: "authorization", value: "bearer \(providerToken)", neverIndex: false))
        }
        fields.append(HeaderField(name: "apns-push-type", value: pushType.rawValue, neverIndex: false))
        // Broadcasts name the request's id `apns-request-id`; the row's apns_id serves as both.
        let idHeader = if case .channel = recipient { "apns-request-id" } else { "apns-id" }
        fields.append(HeaderField(name: idHeader, value: apnsID.lowercasedString, neverIndex: true))
        if let expiration {
            fields.append(HeaderField(name: "apns-expiration", value: String(expiration), neverIndex: true))
        }
        fields.append(HeaderField(name: "apns-priority", value: priority.headerValue, neverIndex: false))
        if case .channel(let channelID) = recipient {
            fields.append(HeaderField(name: "apns-channel-id", value: channelID, neverIndex: true))
            return fields
        }
        fields.append(HeaderField(name: "apns-topic", value: topic, neverIndex: false))
        if let collapseID {
            fields.append(HeaderField(name: "apns-collapse-id", value: collapseID, neverIndex: true))
        }
        return fields
    }
}
