import COpenSSL

/// An EC P-256 private key that signs APNs provider tokens (ES256), usually an
/// Apple `.p8` file (unencrypted PKCS#8 PEM).
///
/// `@unchecked Sendable`: the EVP_PKEY is never mutated after loading, and OpenSSL 3
/// allows concurrent EVP_DigestSign on one key with a separate EVP_MD_CTX per call.
package final class ES256PrivateKey: @unchecked Sendable, CustomStringConvertible {
    private let key: OpaquePointer

    private init(owning key: OpaquePointer) {
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Loads a `.p8` file.
    package convenience init(contentsOfFile path: String) throws(CredentialError) {
        let bytes = try CredentialFile.contents(of: path)
        try self.init(pemBytes: bytes, source: path)
    }

    /// Loads PEM text; `source` names it in errors.
    package convenience init(pemEncoded pem: String, source: String = "PEM data") throws(CredentialError) {
        try self.init(pemBytes: Array(pem.utf8), source: source)
    }

    private convenience init(pemBytes bytes: [UInt8], source: String) throws(CredentialError) {
        if PEMCodec.containsEncryptedKey(bytes) {
            throw .encryptedPrivateKey(source: source)
        }
        let loaded = try PEMCodec.reading(bytes) { bio in
            PEM_read_bio_PrivateKey(bio, nil, PEMCodec.refusePassphrase, nil)
        }
        self.init(owning: try ES256KeyCheck.acceptDecoded(loaded, missing: .notAPrivateKey(source: source), source: source))
    }

    /// A fresh random key, for the simulator and the demo.
    package static func generate() throws(CredentialError) -> ES256PrivateKey {
        ES256PrivateKey(owning: try ECKeyGenerator.generateP256())
    }

    /// The signature of `message` with ECDSA P-256 / SHA-256, as raw r‖s (64 bytes).
    package func sign(_ message: some Collection<UInt8>) throws(CredentialError) -> [UInt8] {
        try ECDSASignatureEncoding.raw(fromDER: DigestSignature.sign(message, with: key))
    }

    /// The key as unencrypted PKCS#8 PEM (the `.p8` form). This is secret material.
    package func pkcs8PEM() throws(CredentialError) -> String {
        try PEMCodec.writing("PEM_write_bio_PrivateKey") { bio in
            PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1
        }
    }

    /// Writes the key as a `.p8` file readable by its owner only (mode 0600).
    package func writePKCS8(toFile path: String) throws(CredentialError) {
        try CredentialFile.writeSecret(pkcs8PEM(), to: path)
    }

    /// The public half as `-----BEGIN PUBLIC KEY-----` PEM.
    package func publicKeyPEM() throws(CredentialError) -> String {
        try DigestSignature.publicKeyPEM(key)
    }

    /// The public half as an uncompressed point (0x04 ‖ x ‖ y, 65 bytes): a VAPID key as
    /// browsers take it (`applicationServerKey`) and as the `k` of its header.
    package func uncompressedPublicKey() throws(CredentialError) -> [UInt8] {
        guard let encoded = P256KeyAgreementKey.uncompressedPublicKey(of: key) else {
            throw .openSSL("EVP_PKEY_get1_encoded_public_key")
        }
        return encoded
    }

    /// The public half, holding no private material.
    package func publicKey() throws(CredentialError) -> ES256PublicKey {
        try ES256PublicKey(pemEncoded: publicKeyPEM(), source: "derived public key")
    }

    /// Names the algorithm only; key material never appears in logs.
    package var description: String { "ES256PrivateKey(P-256)" }

    /// For code in this module that hands the key to OpenSSL (certificate signing).
    func withEVPKey<Result>(_ body: (OpaquePointer) throws(CredentialError) -> Result) throws(CredentialError) -> Result {
        try body(key)
    }
}
