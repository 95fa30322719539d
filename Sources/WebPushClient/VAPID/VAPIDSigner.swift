import Foundation
import PGPushCore
import PushCrypto

/// Makes VAPID tokens (RFC 8292): a JWT with header `{"typ":"JWT","alg":"ES256"}` and claims
/// `aud` (the push service's origin), `exp` and `sub`, signed with the application's P-256 key
/// as raw r‖s, sent with that key's public half.
package struct VAPIDSigner: Sendable {
    /// How long a token is valid. RFC 8292 allows up to 24 hours; half of that leaves room
    /// for a clock that is ahead (push services refuse an `exp` more than a day away).
    package static let lifetime: TimeInterval = 12 * 3600

    static let encodedHeader = Base64URL.encode(#"{"typ":"JWT","alg":"ES256"}"#)

    private let key: ES256PrivateKey
    package let subject: VAPIDSubject
    /// The public key, base64url: the header's `k`, and what a web app subscribes with.
    package let publicKey: String

    package init(key: ES256PrivateKey, subject: VAPIDSubject) throws(CredentialError) {
        self.key = key
        self.subject = subject
        publicKey = Base64URL.encode(try key.uncompressedPublicKey())
    }

    /// A token for `audience` (an origin) that expires `lifetime` after `now` (whole seconds).
    package func sign(audience: String, now: Date) throws(VAPIDError) -> VAPIDToken {
        let expiry = (now.timeIntervalSince1970 + Self.lifetime).rounded(.down)
        let claims = #"{"aud":\#(JSONText.quoted(audience)),"exp":\#(Int64(expiry)),"sub":\#(JSONText.quoted(subject.text))}"#
        let signingInput = Self.encodedHeader + "." + Base64URL.encode(claims)
        let signature: [UInt8]
        do {
            signature = try key.sign(signingInput.utf8)
        } catch {
            throw .signingFailed(error.description)
        }
        let jwt = signingInput + "." + Base64URL.encode(signature)
        return VAPIDToken(audience: audience, expiresAt: Date(timeIntervalSince1970: expiry),
                          authorizationHeader: "vapid t=\(jwt), k=\(publicKey)")
    }
}
