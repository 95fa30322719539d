import COpenSSL

/// An RSA private key that signs with RS256 (RSASSA-PKCS1-v1_5, SHA-256): the key of a
/// Google service account, which signs the assertion an FCM sender trades for an access
/// token. The key file's `private_key` is PEM, PKCS#8 (`BEGIN PRIVATE KEY`) or PKCS#1
/// (`BEGIN RSA PRIVATE KEY`); both load.
///
/// `@unchecked Sendable`: the EVP_PKEY is never mutated after loading, and OpenSSL 3
/// allows concurrent EVP_DigestSign on one key with a separate EVP_MD_CTX per call.
package final class RS256PrivateKey: @unchecked Sendable, CustomStringConvertible {
    private let key: OpaquePointer

    private init(owning key: OpaquePointer) {
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Loads PEM text; `source` names it in errors (never the text itself).
    package convenience init(pemEncoded pem: String, source: String = "PEM data") throws(CredentialError) {
        let bytes = Array(pem.utf8)
        if PEMCodec.containsEncryptedKey(bytes) {
            throw .encryptedPrivateKey(source: source)
        }
        let loaded = try PEMCodec.reading(bytes) { bio in
            PEM_read_bio_PrivateKey(bio, nil, PEMCodec.refusePassphrase, nil)
        }
        self.init(owning: try RSAKeyCheck.acceptDecoded(loaded, missing: .notAPrivateKey(source: source), source: source))
    }

    /// A fresh random key of `bits` bits, for the simulator, the demo and tests.
    package static func generate(bits: Int = RSAKeyCheck.smallestBits) throws(CredentialError) -> RS256PrivateKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else {
            throw CredentialError.openSSL("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1 else {
            throw CredentialError.openSSL("RSA key generation setup")
        }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(context, &key) == 1, let key else {
            throw CredentialError.openSSL("EVP_PKEY_generate")
        }
        return RS256PrivateKey(owning: key)
    }

    /// The RS256 signature of `message` (as long as the key's modulus).
    package func sign(_ message: some Collection<UInt8>) throws(CredentialError) -> [UInt8] {
        try DigestSignature.sign(message, with: key)
    }

    /// The key as unencrypted PKCS#8 PEM. This is secret material.
    package func pkcs8PEM() throws(CredentialError) -> String {
        try PEMCodec.writing("PEM_write_bio_PrivateKey") { bio in
            PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1
        }
    }

    /// The public half, holding no private material.
    package func publicKey() throws(CredentialError) -> RS256PublicKey {
        try RS256PublicKey(pemEncoded: DigestSignature.publicKeyPEM(key), source: "derived public key")
    }

    /// Names the algorithm and size only; key material never appears in logs.
    package var description: String { "RS256PrivateKey(RSA \(EVP_PKEY_get_bits(key)))" }
}
