import Foundation
import PGPushCore
import PushCrypto

/// Makes APNs provider tokens: header `{"alg":"ES256","kid":…}`, claims
/// `{"iss":…,"iat":…}`, signed with the team's P-256 key as raw r‖s (RFC 7518 §3.4).
package struct ProviderTokenSigner: Sendable {
    package let identity: ProviderTokenIdentity
    private let key: ES256PrivateKey

    package init(key: ES256PrivateKey, identity: ProviderTokenIdentity) {
        self.key = key
        self.identity = identity
    }

    /// Loads the `.p8` key and checks the ids; errors are `CredentialError` (key) or `ProviderTokenError` (ids).
    package init(keyFile: String, keyID: String, teamID: String) throws {
        let identity = try ProviderTokenIdentity(keyID: keyID, teamID: teamID)
        self.init(key: try ES256PrivateKey(contentsOfFile: keyFile), identity: identity)
    }

    /// A token whose `iat` is `issuedAt`, truncated to whole seconds as the claim requires.
    package func sign(issuedAt: Date) throws(ProviderTokenError) -> ProviderToken {
        let seconds = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        // The ids are [A-Z0-9]{10} (checked by ProviderTokenIdentity), so no JSON escaping is needed.
        let header = #"{"alg":"ES256","kid":"\#(identity.keyID)"}"#
        let claims = #"{"iss":"\#(identity.teamID)","iat":\#(seconds)}"#
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature: [UInt8]
        do {
            signature = try key.sign(signingInput.utf8)
        } catch {
            throw .signingFailed(error.description)
        }
        return ProviderToken(
            jwt: signingInput + "." + Base64URL.encode(signature),
            keyID: identity.keyID,
            issuedAt: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}
