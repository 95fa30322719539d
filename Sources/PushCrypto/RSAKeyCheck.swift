import COpenSSL

/// RS256 needs an RSA key; Google's service-account keys are 2,048 bits, and anything
/// smaller is refused when it is loaded rather than at the first token exchange.
package enum RSAKeyCheck {
    package static let smallestBits = 2048
    static let needed = "a service account's assertion is signed with RS256, an RSA key of at least \(smallestBits) bits"

    /// Takes ownership of a key a PEM decoder returned: nil becomes `missing`, a key that is
    /// not RSA of `smallestBits` or more is freed and refused; on success the caller owns it.
    static func acceptDecoded(_ loaded: OpaquePointer?, missing: CredentialError,
                              source: String) throws(CredentialError) -> OpaquePointer {
        guard let loaded else {
            _ = CredentialError.takeOpenSSLErrors()
            throw missing
        }
        let isRSA = EVP_PKEY_get_base_id(loaded) == EVP_PKEY_RSA
        let bits = Int(EVP_PKEY_get_bits(loaded))
        guard isRSA, bits >= smallestBits else {
            let found = isRSA ? "\(bits)-bit RSA" : EVP_PKEY_get0_type_name(loaded).map { String(cString: $0) } ?? "non-RSA"
            EVP_PKEY_free(loaded)
            throw .wrongKeyType(source: source, found: found, needed: needed)
        }
        // Decoders queue errors for the formats they tried first; the TLS layer must not see them.
        ERR_clear_error()
        return loaded
    }
}
