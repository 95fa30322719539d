import COpenSSL

/// SHA-256 signatures with an EVP key, whatever its type: the one place pgpush calls
/// EVP_DigestSign and EVP_DigestVerify (ES256 gives DER that its caller converts, RS256
/// PKCS#1 v1.5, OpenSSL's default padding for RSA and the one RFC 7518 §3.3 names).
enum DigestSignature {
    static func sign(_ message: some Collection<UInt8>, with key: OpaquePointer) throws(CredentialError) -> [UInt8] {
        let bytes = Array(message)
        guard let context = EVP_MD_CTX_new() else { throw CredentialError.openSSL("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw CredentialError.openSSL("EVP_DigestSignInit")
        }
        var capacity = 0
        guard EVP_DigestSign(context, nil, &capacity, bytes, bytes.count) == 1 else {
            throw CredentialError.openSSL("EVP_DigestSign")
        }
        var signature = [UInt8](repeating: 0, count: capacity)
        var length = capacity
        guard EVP_DigestSign(context, &signature, &length, bytes, bytes.count) == 1 else {
            throw CredentialError.openSSL("EVP_DigestSign")
        }
        return Array(signature.prefix(length))
    }

    /// Whether `signature` verifies; a failure leaves nothing on OpenSSL's error queue.
    static func verify(_ signature: [UInt8], of message: some Collection<UInt8>, with key: OpaquePointer) -> Bool {
        let bytes = Array(message)
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        let valid = EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1
            && EVP_DigestVerify(context, signature, signature.count, bytes, bytes.count) == 1
        if !valid { _ = CredentialError.takeOpenSSLErrors() }
        return valid
    }

    /// `-----BEGIN PUBLIC KEY-----` PEM of a key's public half.
    static func publicKeyPEM(_ key: OpaquePointer) throws(CredentialError) -> String {
        try PEMCodec.writing("PEM_write_bio_PUBKEY") { bio in
            PEM_write_bio_PUBKEY(bio, key) == 1
        }
    }
}
