import APNsCore
import Foundation
import PGPushCore
import PushCrypto

/// Checks one `authorization: bearer <JWT>` value the way APNs does:
/// ES256 only, `kid` and `iss` must name a configured key and its team, the raw r‖s
/// signature must verify, and `iat` may be at most one hour old. A team may have a second
/// key (Apple allows two at a time), which is how a key is rotated without refusals.
package struct ProviderTokenVerifier: Sendable {
    /// APNs refuses tokens whose `iat` is older than this.
    package static let maximumAge: TimeInterval = 3600
    /// Tolerated clock skew for an `iat` in the future; beyond it the token is invalid.
    package static let futureTolerance: TimeInterval = 300

    package let key: ProviderTokenKey
    /// Other keys accepted beside `key`.
    package let otherKeys: [ProviderTokenKey]

    package init(key: ProviderTokenKey, otherKeys: [ProviderTokenKey] = []) {
        self.key = key
        self.otherKeys = otherKeys
    }

    /// The token when the `authorization` value holds a valid one, else the 403 reason.
    package func verify(authorization: String?, now: Date) -> Result<VerifiedProviderToken, ProviderTokenRejection> {
        guard let authorization, !authorization.isEmpty else { return .failure(.init(.missingProviderToken)) }
        guard let token = Self.bearerToken(in: authorization) else { return .failure(.init(.invalidProviderToken)) }
        return verify(token: token, now: now)
    }

    package func verify(token: String, now: Date) -> Result<VerifiedProviderToken, ProviderTokenRejection> {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let header = JSONValue.parse(headerBytes), let claims = JSONValue.parse(claimBytes)
        else { return .failure(.init(.invalidProviderToken)) }
        let keyID = header["kid"]?.stringValue
        guard header["alg"]?.stringValue == "ES256",
              let key = ([key] + otherKeys).first(where: { $0.keyID == keyID }),
              claims["iss"]?.stringValue == key.teamID,
              let issuedAt = claims["iat"]?.integerValue,
              signature.count == 64
        else { return .failure(.init(.invalidProviderToken)) }
        let signedPart = token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count)
        guard key.publicKey.verify(message: signedPart, rawSignature: signature) else {
            return .failure(.init(.invalidProviderToken))
        }
        let verified = VerifiedProviderToken(token: token, issuedAt: Date(timeIntervalSince1970: TimeInterval(issuedAt)))
        if let rejection = Self.checkAge(of: verified, now: now) { return .failure(rejection) }
        return .success(verified)
    }

    /// Age rule alone, for a token verified earlier on the same connection.
    package static func checkAge(of token: VerifiedProviderToken, now: Date) -> ProviderTokenRejection? {
        let age = now.timeIntervalSince(token.issuedAt)
        if age > maximumAge { return ProviderTokenRejection(.expiredProviderToken) }
        if age < -futureTolerance { return ProviderTokenRejection(.invalidProviderToken) }
        return nil
    }

    /// The `kid` of the token in an `authorization` value, read without checking anything.
    package static func keyID(inAuthorization authorization: String?) -> String? {
        guard let token = authorization.flatMap(bearerToken(in:)),
              let header = token.split(separator: ".", omittingEmptySubsequences: false).first.flatMap({ Base64URL.decode($0) })
        else { return nil }
        return JSONValue.parse(header)?["kid"]?.stringValue
    }

    /// The JWT after a case-insensitive `bearer ` prefix.
    static func bearerToken(in authorization: String) -> String? {
        let prefix = "bearer "
        guard authorization.count > prefix.count, authorization.prefix(prefix.count).lowercased() == prefix else { return nil }
        let token = authorization.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}

/// What the simulator checks a provider token (JWT) against: the team, the key id and
/// the public half of the `.p8` key.
package struct ProviderTokenKey: Sendable {
    package var teamID: String
    package var keyID: String
    package var publicKey: ES256PublicKey

    package init(teamID: String, keyID: String, publicKey: ES256PublicKey) {
        self.teamID = teamID
        self.keyID = keyID
        self.publicKey = publicKey
    }
}

/// A provider token whose signature, key id and team checked out.
package struct VerifiedProviderToken: Sendable, Equatable, CustomStringConvertible {
    /// The compact JWT text (secret: never logged).
    package let token: String
    package let issuedAt: Date

    /// Leaves the token out: it is a credential.
    package var description: String { "VerifiedProviderToken(issued at \(issuedAt))" }
}

/// Why a provider token was refused: always a 403 reason.
package struct ProviderTokenRejection: Error, Sendable, Equatable {
    package let reason: APNsReason
    package init(_ reason: APNsReason) { self.reason = reason }
}
