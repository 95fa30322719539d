import Foundation
import PGPushCore

/// A browser's push subscription as `PushSubscription.toJSON()` gives it and a row's
/// `subscription` column holds it: `{"endpoint": "https://…", "expirationTime": null,
/// "keys": {"p256dh": "…", "auth": "…"}}`. Keys are base64url without padding; standard
/// base64 with padding, which older stored subscriptions have, is read as well.
package struct WebPushSubscription: Sendable, Equatable {
    package let endpoint: WebPushEndpoint
    /// The browser's P-256 public key, uncompressed (65 bytes). Whether it is a point on the
    /// curve is checked when a message is sealed for it.
    package let p256dh: [UInt8]
    /// The browser's authentication secret (16 bytes).
    package let auth: [UInt8]

    package init(json: some Collection<UInt8>) throws(WebPushRowError) {
        guard case .object(let members)? = JSONValue.parse(json) else { throw .invalidSubscription("not a JSON object") }
        guard let endpointText = members["endpoint"]?.stringValue else { throw .invalidSubscription("no endpoint string") }
        guard case .object(let keys)? = members["keys"] else { throw .invalidSubscription("no keys object") }
        guard let p256dh = keys["p256dh"]?.stringValue.flatMap(Self.decode), p256dh.count == 65, p256dh[0] == 0x04 else {
            throw .invalidSubscription("keys.p256dh is not a base64url uncompressed P-256 point (65 bytes)")
        }
        guard let auth = keys["auth"]?.stringValue.flatMap(Self.decode), auth.count == 16 else {
            throw .invalidSubscription("keys.auth is not 16 bytes of base64url")
        }
        do {
            endpoint = try WebPushEndpoint(endpointText)
        } catch {
            throw .endpointNotAllowed(error.detail)
        }
        self.p256dh = p256dh
        self.auth = auth
    }

    /// base64url without padding, or standard base64 with or without it.
    static func decode(_ text: String) -> [UInt8]? {
        var normalized = String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
        while normalized.hasSuffix("=") { normalized.removeLast() }
        return Base64URL.decode(normalized)
    }
}
