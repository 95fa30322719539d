import COpenSSL

/// Fresh EC P-256 key pairs (generated keys for the simulator, the demo and test certificates).
enum ECKeyGenerator {
    /// A new EVP_PKEY the caller owns.
    static func generateP256() throws(CredentialError) -> OpaquePointer {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw CredentialError.openSSL("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1,
              EVP_PKEY_CTX_set_group_name(context, "P-256") == 1
        else {
            throw CredentialError.openSSL("EC key generation setup")
        }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(context, &key) == 1, let key else {
            throw CredentialError.openSSL("EVP_PKEY_generate")
        }
        return key
    }
}
