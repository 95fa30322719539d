import COpenSSL

/// An EC P-256 public key that checks ES256 signatures (the simulator's JWT check).
///
/// `@unchecked Sendable`: the EVP_PKEY is never mutated after loading, and OpenSSL 3
/// allows concurrent EVP_DigestVerify on one key with a separate EVP_MD_CTX per call.
package final class ES256PublicKey: @unchecked Sendable, CustomStringConvertible {
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
        self.init(owning: try ES256KeyCheck.acceptDecoded(loaded, missing: .notAPublicKey(source: source), source: source))
    }

    /// A key given as an uncompressed point (0x04 ‖ x ‖ y, 65 bytes): the `k` of a VAPID
    /// header, which the Web Push simulator checks tokens with.
    package convenience init(uncompressedPoint point: [UInt8]) throws(CredentialError) {
        let key: OpaquePointer
        do throws(WebPushCryptoError) {
            try P256KeyAgreementKey.checkEncoding(of: point)
            key = try P256KeyAgreementKey.fromData(selection: pgpush_EVP_PKEY_PUBLIC_KEY(), publicKey: point, privateKey: nil)
        } catch {
            throw .notAPublicKey(source: "a 65-byte uncompressed P-256 point (\(error.description))")
        }
        self.init(owning: key)
    }

    /// Loads a PEM public key file, or the public half of a `.p8` private key file,
    /// so the simulator can be pointed at the same key file as the worker.
    package convenience init(contentsOfFile path: String) throws(CredentialError) {
        let bytes = try CredentialFile.contents(of: path)
        let text = String(decoding: bytes, as: UTF8.self)
        if text.contains("PRIVATE KEY-----") {
            let derived = try ES256PrivateKey(pemEncoded: text, source: path).publicKeyPEM()
            try self.init(pemEncoded: derived, source: path)
        } else {
            try self.init(pemEncoded: text, source: path)
        }
    }

    /// The public key of the private key in a `.p8` file.
    package static func fromPrivateKeyFile(_ path: String) throws(CredentialError) -> ES256PublicKey {
        try ES256PrivateKey(contentsOfFile: path).publicKey()
    }

    /// True when `rawSignature` (r‖s, 64 bytes) is a valid ES256 signature of `message`.
    /// Any malformed input is simply "not valid".
    package func verify(message: some Collection<UInt8>, rawSignature: some Collection<UInt8>) -> Bool {
        guard let der = try? ECDSASignatureEncoding.der(fromRaw: Array(rawSignature)) else {
            _ = CredentialError.takeOpenSSLErrors()
            return false
        }
        return DigestSignature.verify(der, of: message, with: key)
    }

    /// `-----BEGIN PUBLIC KEY-----` PEM.
    package func pemEncoded() throws(CredentialError) -> String {
        try DigestSignature.publicKeyPEM(key)
    }

    package var description: String { "ES256PublicKey(P-256)" }
}
