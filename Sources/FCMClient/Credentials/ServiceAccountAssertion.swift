import Foundation
import PGPushCore
import PushCrypto

/// The signed JWT a service account trades for an access token (OAuth 2.0 JWT bearer
/// grant, RFC 7523): header `{"alg":"RS256","kid":…,"typ":"JWT"}`, claims `iss` (the
/// account's email), `scope` (sending FCM messages), `aud` (Google's token endpoint, as
/// Google's own libraries send it whatever the file's `token_uri` says), `iat` and `exp`
/// an hour later, the longest Google accepts.
package enum ServiceAccountAssertion {
    package static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    package static let audience = "https://oauth2.googleapis.com/token"
    package static let lifetime: Int64 = 3600

    /// The compact JWS, issued at `issuedAt` (whole seconds).
    package static func sign(_ key: ServiceAccountKey, issuedAt: Date) throws(CredentialError) -> String {
        let issued = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let header = json(["alg": "RS256", "kid": key.privateKeyID, "typ": "JWT"])
        let claims = json(["iss": key.clientEmail, "scope": scope, "aud": audience,
                           "iat": issued, "exp": issued + lifetime])
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = try key.privateKey.sign(signingInput.utf8)
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// The form body POSTed to the token endpoint.
    package static func tokenRequestBody(assertion: String) -> [UInt8] {
        // A JWS is base64url and dots only: nothing in it needs percent-encoding.
        Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)".utf8)
    }

    /// Compact JSON with sorted keys: the file's text (an email, a key id) is escaped, not trusted.
    private static func json(_ object: [String: Any]) -> [UInt8] {
        // Strings and integers only: serialization cannot fail.
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return Array(data)
    }
}
