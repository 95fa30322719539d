import COpenSSL

/// Opens PKCS#12 (.p12) bundles as exported by Keychain Access or `openssl pkcs12 -export`.
enum PKCS12Reader {
    static func read(_ bytes: [UInt8], password: String?, source: String) throws(CredentialError) -> ClientIdentity {
        let bundle = bytes.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PKCS12(nil, &cursor, buffer.count)
        }
        guard let bundle else {
            throw .malformedPKCS12(source: source, detail: CredentialError.takeOpenSSLErrors())
        }
        defer { PKCS12_free(bundle) }
        let password = try macVerifiedPassword(bundle, given: password, source: source)

        var parsed = try parse(bundle, password: password, source: source)
        var failure = parsed == nil ? CredentialError.takeOpenSSLErrors() : ""
        if parsed == nil, legacyAlgorithmsAvailable {
            // Older exports (Keychain Access among them) encrypt with RC2/3DES, which
            // OpenSSL 3 keeps in its legacy provider.
            parsed = try parse(bundle, password: password, source: source)
            if parsed == nil { failure = CredentialError.takeOpenSSLErrors() }
        }
        guard let (certificate, privateKey, chain) = parsed else {
            throw .malformedPKCS12(source: source, detail: failure)
        }
        return try ClientIdentity.make(
            certificate: certificate, privateKey: privateKey, chain: chain,
            certificateSource: source, keySource: source)
    }

    /// The password that opens the bundle's MAC. With no password given, both the
    /// empty and the absent password are tried, as exporters differ in which they mean.
    private static func macVerifiedPassword(_ bundle: OpaquePointer, given: String?, source: String) throws(CredentialError) -> String? {
        guard PKCS12_mac_present(bundle) == 1 else { return given }
        let candidates: [String?] = given.map { [$0] } ?? [nil, ""]
        for candidate in candidates {
            let verified: Bool
            if let candidate {
                verified = PKCS12_verify_mac(bundle, candidate, -1) == 1
            } else {
                verified = PKCS12_verify_mac(bundle, nil, 0) == 1
            }
            if verified { return candidate }
        }
        _ = CredentialError.takeOpenSSLErrors()
        throw .wrongPassword(source: source)
    }

    /// Certificate, key and chain, owned by the caller; nil when OpenSSL cannot decrypt the contents.
    private static func parse(_ bundle: OpaquePointer, password: String?, source: String) throws(CredentialError)
        -> (certificate: OpaquePointer, privateKey: OpaquePointer, chain: [OpaquePointer])?
    {
        var privateKey: OpaquePointer?
        var certificate: OpaquePointer?
        var stack: OpaquePointer?
        let parsed = PKCS12_parse(bundle, password, &privateKey, &certificate, &stack) == 1
        let chain = takeCertificates(from: stack)
        if parsed, let certificate, let privateKey {
            return (certificate, privateKey, chain)
        }
        X509_free(certificate)
        EVP_PKEY_free(privateKey)
        chain.forEach { X509_free($0) }
        guard parsed else { return nil }
        throw .malformedPKCS12(
            source: source, detail: privateKey == nil ? "it holds no private key" : "it holds no certificate for its private key")
    }

    /// Moves the certificates out of an OpenSSL stack and frees the stack.
    private static func takeCertificates(from stack: OpaquePointer?) -> [OpaquePointer] {
        guard let stack else { return [] }
        var certificates: [OpaquePointer] = []
        while OPENSSL_sk_num(stack) > 0, let element = OPENSSL_sk_shift(stack) {
            certificates.append(OpaquePointer(element))
        }
        OPENSSL_sk_free(stack)
        return certificates
    }

    /// Loads the legacy provider next to the default one, once per process (the first
    /// time a bundle needs it); false when it is not installed.
    private static let legacyAlgorithmsAvailable: Bool = {
        // retain_fallbacks = 1 keeps the default provider active alongside it.
        let loaded = OSSL_PROVIDER_try_load(nil, "legacy", 1) != nil
        ERR_clear_error()
        return loaded
    }()
}
