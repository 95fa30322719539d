import Foundation

/// A signed APNs provider token (JWT, ES256) and when it was issued.
///
/// Its description leaves out the JWT: a token grants push access for up to an hour.
package struct ProviderToken: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The compact JWS: `header.claims.signature`, base64url without padding.
    package let jwt: String
    package let keyID: String
    /// The `iat` claim, whole seconds.
    package let issuedAt: Date
    /// The value of the `authorization` request header, made once: every request of the
    /// token's hour carries it.
    package let authorizationHeader: String

    package init(jwt: String, keyID: String, issuedAt: Date) {
        self.jwt = jwt
        self.keyID = keyID
        self.issuedAt = issuedAt
        authorizationHeader = "bearer \(jwt)"
    }

    package func age(at now: Date) -> TimeInterval {
        now.timeIntervalSince(issuedAt)
    }

    package var description: String {
        "ProviderToken(kid: \(keyID), issued \(issuedAt.formatted(.iso8601)))"
    }

    package var debugDescription: String { description }

    /// `dump` and debuggers show the same redacted view.
    package var customMirror: Mirror {
        Mirror(self, children: ["keyID": keyID, "issuedAt": issuedAt], displayStyle: .struct)
    }
}

/// Who a provider token speaks for: the signing key's id (`kid`) and the team (`iss`).
package struct ProviderTokenIdentity: Sendable, Equatable {
    package let keyID: String
    package let teamID: String

    /// Checks both identifiers; the error names the one that is wrong.
    package init(keyID: String, teamID: String) throws(ProviderTokenError) {
        guard Self.isAppleIdentifier(keyID) else { throw .invalidKeyID(keyID) }
        guard Self.isAppleIdentifier(teamID) else { throw .invalidTeamID(teamID) }
        self.keyID = keyID
        self.teamID = teamID
    }

    /// Apple's key and team ids are 10 characters of upper-case letters and digits.
    /// Checking this also makes them safe to place in JSON without escaping.
    static func isAppleIdentifier(_ value: String) -> Bool {
        value.utf8.count == 10 && value.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        }
    }
}

/// Why a provider token (JWT) cannot be made.
package enum ProviderTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The Key ID is not 10 characters of A–Z and 0–9 (as shown in the developer account).
    case invalidKeyID(String)
    /// The Team ID is not 10 characters of A–Z and 0–9.
    case invalidTeamID(String)
    /// A refresh age outside what Apple allows (20 to 60 minutes).
    case invalidRefreshAge(seconds: Double)
    /// OpenSSL could not sign; the detail names the operation, never the key.
    case signingFailed(String)
    /// APNs refused a token signed moments before as expired; no new one is signed for this long.
    case refusedByAPNs(retryInSeconds: Int)

    package var description: String {
        switch self {
        case .invalidKeyID(let value):
            return "key id \"\(value)\" is invalid: it must be exactly 10 characters, A-Z and 0-9 (PGPUSH_KEY_ID)"
        case .invalidTeamID(let value):
            return "team id \"\(value)\" is invalid: it must be exactly 10 characters, A-Z and 0-9 (PGPUSH_TEAM_ID)"
        case .invalidRefreshAge(let seconds):
            return "provider token refresh age \(Int(seconds)) s is invalid: Apple allows a new token at most every 20 minutes and requires one at least every 60"
        case .signingFailed(let detail):
            return "signing the provider token failed: \(detail)"
        case .refusedByAPNs(let seconds):
            return "APNs refused a provider token signed moments before as expired: check this machine's clock (NTP) "
                + "and that the key is not revoked; the next token is signed in \(seconds) s"
        }
    }
}
