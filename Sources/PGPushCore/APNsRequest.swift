import Foundation

/// A validated notification in the shape APNs wants:
/// `POST /3/device/<token>` with its headers and compact JSON body.
///
/// The JWT is not part of it: one token is shared by many requests and replaced
/// every ~50 minutes, so the sender passes it in when building the header list.
public struct APNsRequest: Equatable, Sendable {
    public let notificationID: Int64
    public let deviceToken: DeviceToken
    public let pushType: PushType
    public let priority: APNsPriority
    public let topic: String
    public let apnsID: UUID
    /// Absolute UNIX seconds; nil omits the header (APNs's default storage policy).
    public let expiration: Int64?
    public let collapseID: String?
    /// The compact JSON body.
    public let body: [UInt8]

    public var path: String { "/3/device/\(deviceToken.hex)" }

    /// The complete header list for this request, pseudo-headers first, each
    /// name once (APNs answers a repeated header with 400 DuplicateHeaders).
    ///
    /// `:scheme` and `:authority` are included because RFC 9113 §8.3.1 makes
    /// `:scheme` mandatory for a request, and a server (nghttp2 included) resets
    /// a stream without it.
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
        fields.append(HeaderField(name: "apns-id", value: apnsID.lowercasedString, neverIndex: true))
        if let expiration {
            fields.append(HeaderField(name: "apns-expiration", value: String(expiration), neverIndex: true))
        }
        fields.append(HeaderField(name: "apns-priority", value: priority.headerValue, neverIndex: false))
        fields.append(HeaderField(name: "apns-topic", value: topic, neverIndex: false))
        if let collapseID {
            fields.append(HeaderField(name: "apns-collapse-id", value: collapseID, neverIndex: true))
        }
        return fields
    }
}
