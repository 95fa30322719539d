import Foundation

/// A signed VAPID token for one push service origin, and the `Authorization` header that
/// carries it with the application's public key (RFC 8292 §3).
///
/// Its description leaves out the JWT: anyone holding it could send to that push service as
/// the application until it expires.
package struct VAPIDToken: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The origin the token is for (its `aud`): `https://host[:port]`.
    package let audience: String
    /// The `exp` claim.
    package let expiresAt: Date
    /// `vapid t=<JWT>, k=<public key>`, made once per token.
    package let authorizationHeader: String

    package var description: String {
        "VAPIDToken(aud: \(audience), exp: \(expiresAt.formatted(.iso8601)))"
    }

    package var debugDescription: String { description }

    package var customMirror: Mirror {
        Mirror(self, children: ["audience": audience, "expiresAt": expiresAt], displayStyle: .struct)
    }
}
