import Foundation

/// A signed APNs provider token (JWT, ES256) and when it was issued.
///
/// Its description leaves out the JWT: a token grants push access for up to an hour.
public struct ProviderToken: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The compact JWS: `header.claims.signature`, base64url without padding.
    public let jwt: String
    public let keyID: String
    /// The `iat` claim, whole seconds.
    public let issuedAt: Date

    public init(jwt: String, keyID: String, issuedAt: Date) {
        self.jwt = jwt
        self.keyID = keyID
        self.issuedAt = issuedAt
    }

    /// The value of the `authorization` request header.
    public var authorizationHeader: String { "bearer \(jwt)" }

    public func age(at now: Date) -> TimeInterval {
        now.timeIntervalSince(issuedAt)
    }

    public var description: String {
        "ProviderToken(kid: \(keyID), issued \(issuedAt.formatted(.iso8601)))"
    }

    public var debugDescription: String { description }

    /// `dump` and debuggers show the same redacted view.
    public var customMirror: Mirror {
        Mirror(self, children: ["keyID": keyID, "issuedAt": issuedAt], displayStyle: .struct)
    }
}
