import COpenSSL

/// JWS (RFC 7518 §3.4) wants an ES256 signature as raw r‖s, 32 bytes each;
/// OpenSSL produces and expects DER `ECDSA-Sig-Value`. These convert between the two.
enum ECDSASignatureEncoding {
    static let scalarLength = 32
    static let rawLength = 2 * scalarLength

    static func raw(fromDER der: [UInt8]) throws(CredentialError) -> [UInt8] {
        let signature = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else { throw CredentialError.openSSL("d2i_ECDSA_SIG") }
        defer { ECDSA_SIG_free(signature) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(signature, &r, &s)
        var raw = [UInt8](repeating: 0, count: rawLength)
        let written = raw.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return BN_bn2binpad(r, base, Int32(scalarLength)) == scalarLength
                && BN_bn2binpad(s, base + scalarLength, Int32(scalarLength)) == scalarLength
        }
        guard written else { throw CredentialError.openSSL("BN_bn2binpad") }
        return raw
    }

    static func der(fromRaw raw: [UInt8]) throws(CredentialError) -> [UInt8] {
        guard raw.count == rawLength else { throw .invalidSignatureLength(raw.count) }
        guard let signature = ECDSA_SIG_new() else { throw CredentialError.openSSL("ECDSA_SIG_new") }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32(scalarLength), nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress.map { $0 + scalarLength }, Int32(scalarLength), nil) }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            throw CredentialError.openSSL("BN_bin2bn")
        }
        // ECDSA_SIG_set0 takes ownership of r and s only when it succeeds.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            throw CredentialError.openSSL("ECDSA_SIG_set0")
        }
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &output)
        guard length > 0, let output else { throw CredentialError.openSSL("i2d_ECDSA_SIG") }
        defer { pgpush_OPENSSL_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }
}
