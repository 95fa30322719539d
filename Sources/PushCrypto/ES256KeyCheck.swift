import COpenSSL

/// ES256 means ECDSA on P-256 with SHA-256; APNs rejects anything else, so a key
/// of another type or curve is refused when it is loaded rather than at the first push.
enum ES256KeyCheck {
    static let needed = "APNs provider tokens need an EC P-256 key (ES256)"

    static func requireP256(_ key: OpaquePointer, source: String) throws(CredentialError) {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            let typeName = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "non-EC"
            throw .wrongKeyType(source: source, found: typeName, needed: needed)
        }
        var name = [CChar](repeating: 0, count: 80)
        var nameLength = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &nameLength) == 1 else {
            _ = CredentialError.takeOpenSSLErrors()
            throw .wrongCurve(source: source, found: "unnamed (explicit parameters)")
        }
        let curve = String(decoding: name.prefix(nameLength).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard OBJ_txt2nid(curve) == NID_X9_62_prime256v1 else {
            throw .wrongCurve(source: source, found: curve)
        }
    }

    /// Takes ownership of a key a PEM decoder returned: nil becomes `missing`, a key that
    /// is not P-256 is freed and refused; on success the caller owns the key.
    static func acceptDecoded(_ loaded: OpaquePointer?, missing: CredentialError,
                              source: String) throws(CredentialError) -> OpaquePointer {
        guard let loaded else {
            _ = CredentialError.takeOpenSSLErrors()
            throw missing
        }
        do {
            try requireP256(loaded, source: source)
        } catch {
            EVP_PKEY_free(loaded)
            throw error
        }
        // Decoders queue errors for the formats they tried first; the TLS layer must not see them.
        ERR_clear_error()
        return loaded
    }
}
