import COpenSSL

/// An RSA public key that checks RS256 signatures (the FCM simulator's assertion check).
///
/// `@unchecked Sendable`: the EVP_PKEY is never mutated after loading, and OpenSSL 3
/// allows concurrent EVP_DigestVerify on one key with a separate EVP_MD_CTX per call.
package final class RS256PublicKey: @unchecked Sendable, CustomStringConvertible {
    private let key: OpaquePointer

    private init(owning key: OpaquePointer) {
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Loads `-----BEGIN PUBLIC KEY-----` PEM text; `source` names it in errors.
    package convenience init(pemEncoded pem: String, source: String = "PEM data") throws(CredentialError) {
        let loaded = try PEMCodec.reading(Array(pem.utf8)) { bio in
            PEM_read_bio_PUBKEY(bio, nil, PEMCodec.refusePassphrase, nil)
        }
        self.init(owning: try RSAKeyCheck.acceptDecoded(loaded, missing: .notAPublicKey(source: source), source: source))
    }

    /// True when `signature` is a valid RS256 signature of `message`; malformed input is
    /// simply "not valid".
    package func verify(message: some Collection<UInt8>, signature: some Collection<UInt8>) -> Bool {
        DigestSignature.verify(Array(signature), of: message, with: key)
    }

    /// `-----BEGIN PUBLIC KEY-----` PEM.
    package func pemEncoded() throws(CredentialError) -> String {
        try DigestSignature.publicKeyPEM(key)
    }

    package var description: String { "RS256PublicKey(RSA \(EVP_PKEY_get_bits(key)))" }
}
