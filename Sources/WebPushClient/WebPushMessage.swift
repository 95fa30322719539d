import PGPushCore
import PushCrypto

/// A Web Push request (RFC 8030 §5) for one row: `POST` to the subscription's endpoint with
/// the payload sealed for it (RFC 8291) and the headers the row's columns say. The VAPID
/// `Authorization` header is added at send time, per origin (`VAPIDTokenCache`).
package struct WebPushMessage: Sendable {
    /// The longest `TTL`: 28 days, what FCM keeps a message at most.
    package static let longestTimeToLive = 2_419_200
    /// RFC 8030 §5.4: at most 32 characters of the URL-safe base64 alphabet; Apple also
    /// refuses a length no base64url text can have (one more than a multiple of four).
    package static let longestTopic = 32

    package let endpoint: WebPushEndpoint
    /// `ttl`, `urgency`, `topic` (when the row has one), `content-encoding`, `content-type`.
    package let headers: [(name: String, value: String)]
    /// The sealed payload: header and one aes128gcm record.
    package let body: [UInt8]

    /// `payload` is the row's payload as compact JSON text; `timeToLive` the seconds left until
    /// `expires_at` (nil without one); `priority` 10, 5, 1 or nil; `topic` the `collapse_id`.
    package init(subscription: WebPushSubscription, payload: [UInt8], priority: Int?, timeToLive: Int?, deliverOnce: Bool,
                 topic: String?) throws(WebPushRowError) {
        guard payload.count <= WebPushEncryption.largestPlaintext else {
            throw .payloadTooLarge(size: payload.count, limit: WebPushEncryption.largestPlaintext)
        }
        if let topic { try Self.check(topic: topic) }
        let ttl = deliverOnce ? 0 : min(max(timeToLive ?? Self.longestTimeToLive, 0), Self.longestTimeToLive)
        var headers: [(name: String, value: String)] = [("ttl", String(ttl)), ("urgency", Self.urgency(priority))]
        if let topic { headers.append(("topic", topic)) }
        headers += [("content-encoding", "aes128gcm"), ("content-type", "application/octet-stream")]
        do {
            body = try WebPushEncryption.seal(payload, p256dh: subscription.p256dh, auth: subscription.auth)
        } catch {
            throw .encryption(error.description)
        }
        endpoint = subscription.endpoint
        self.headers = headers
    }

    /// RFC 8030 §5.3 from the row's priority: 10 `high`, 1 `low`, otherwise `normal`.
    static func urgency(_ priority: Int?) -> String {
        switch priority {
        case 10: "high"
        case 1: "low"
        default: "normal"
        }
    }

    static func check(topic: String) throws(WebPushRowError) {
        guard topic.utf8.allSatisfy(Base64URL.alphabet.contains), (1...longestTopic).contains(topic.utf8.count), topic.utf8.count % 4 != 1 else {
            throw .invalidTopic("a topic is 1-32 characters of A-Z a-z 0-9 - _, not 1 more than a multiple of 4 long")
        }
    }
}
