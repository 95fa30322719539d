import COpenSSL
import Foundation

/// When a generated certificate is valid.
public struct CertificateValidity: Sendable, Equatable {
    public let notBefore: Date
    public let notAfter: Date

    public init(notBefore: Date, notAfter: Date) {
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// From an hour before `start` (tolerating small clock differences) to `days` after it.
    public static func days(_ days: Int, from start: Date = Date()) -> CertificateValidity {
        CertificateValidity(notBefore: start.addingTimeInterval(-3_600), notAfter: start.addingTimeInterval(Double(days) * 86_400))
    }
}

/// A certificate issued by `SelfSignedAuthority` with its new private key, both PEM.
public struct IssuedCertificate: Sendable {
    public let certificatePEM: String
    /// Unencrypted PKCS#8; secret material.
    public let privateKeyPEM: String
}

/// A throwaway certificate authority made at start-up, so the APNs simulator and
/// the demo can serve real, verified TLS on localhost: clients trust only its
/// certificate (`PGPUSH_CA_FILE`), and verification stays on. EC P-256, SHA-256.
public struct SelfSignedAuthority: Sendable {
    public let certificatePEM: String
    /// Unencrypted PKCS#8; secret material.
    public let privateKeyPEM: String

    /// Reuses an authority saved earlier.
    public init(certificatePEM: String, privateKeyPEM: String) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
    }

    /// A new authority with a fresh key.
    public static func generate(
        commonName: String = "pgpush local test CA", validity: CertificateValidity = .days(30)
    ) throws(CredentialError) -> SelfSignedAuthority {
        let key = try ECKeyGenerator.generateP256()
        defer { EVP_PKEY_free(key) }
        let certificate = try CertificateBuilder.build(
            commonName: commonName, validity: validity, subjectKey: key, issuer: nil, issuerKey: key,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
            ])
        defer { X509_free(certificate) }
        return SelfSignedAuthority(
            certificatePEM: try CertificateBuilder.pem(of: certificate),
            privateKeyPEM: try CertificateBuilder.pkcs8PEM(of: key))
    }

    /// A TLS server certificate for the given host names and IP addresses, signed by this authority.
    public func issueServerCertificate(
        commonName: String = "localhost",
        dnsNames: [String] = ["localhost"],
        ipAddresses: [String] = ["127.0.0.1", "::1"],
        validity: CertificateValidity = .days(30)
    ) throws(CredentialError) -> IssuedCertificate {
        guard !dnsNames.isEmpty || !ipAddresses.isEmpty else {
            throw .invalidCertificateRequest("a server certificate needs at least one DNS name or IP address")
        }
        var alternativeNames: [String] = []
        for name in dnsNames {
            guard Self.isValidDNSName(name) else { throw .invalidCertificateRequest("\"\(name)\" is not a DNS name") }
            alternativeNames.append("DNS:\(name)")
        }
        for address in ipAddresses {
            guard Self.isValidIPAddress(address) else { throw .invalidCertificateRequest("\"\(address)\" is not an IP address") }
            alternativeNames.append("IP:\(address)")
        }
        return try issue(commonName: commonName, validity: validity, extensions: [
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_key_usage, "critical,digitalSignature"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_alt_name, alternativeNames.joined(separator: ",")),
            (NID_subject_key_identifier, "hash"),
            (NID_authority_key_identifier, "keyid:always"),
        ])
    }

    /// A TLS client certificate (for testing certificate-based authentication).
    public func issueClientCertificate(
        commonName: String, validity: CertificateValidity = .days(30)
    ) throws(CredentialError) -> IssuedCertificate {
        try issue(commonName: commonName, validity: validity, extensions: [
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_key_usage, "critical,digitalSignature"),
            (NID_ext_key_usage, "clientAuth"),
            (NID_subject_key_identifier, "hash"),
            (NID_authority_key_identifier, "keyid:always"),
        ])
    }

    private func issue(
        commonName: String, validity: CertificateValidity, extensions: [(Int32, String)]
    ) throws(CredentialError) -> IssuedCertificate {
        let authorityKey = try ES256PrivateKey(pemEncoded: privateKeyPEM, source: "authority key")
        let authorityCertificate = try CertificateBuilder.parseCertificate(certificatePEM)
        defer { X509_free(authorityCertificate) }
        let subjectKey = try ECKeyGenerator.generateP256()
        defer { EVP_PKEY_free(subjectKey) }
        let certificate = try authorityKey.withEVPKey { (issuerKey) throws(CredentialError) -> OpaquePointer in
            try CertificateBuilder.build(
                commonName: commonName, validity: validity, subjectKey: subjectKey,
                issuer: authorityCertificate, issuerKey: issuerKey, extensions: extensions)
        }
        defer { X509_free(certificate) }
        return IssuedCertificate(
            certificatePEM: try CertificateBuilder.pem(of: certificate),
            privateKeyPEM: try CertificateBuilder.pkcs8PEM(of: subjectKey))
    }

    private static func isValidDNSName(_ name: String) -> Bool {
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        return !name.isEmpty && name.utf8.count <= 253 && labels.allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && label.utf8.allSatisfy { byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "*")
            }
        }
    }

    private static func isValidIPAddress(_ address: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, address, &buffer) == 1 || inet_pton(AF_INET6, address, &buffer) == 1
    }
}

/// Assembles and signs X509 v3 certificates.
enum CertificateBuilder {
    /// A new certificate the caller owns. `issuer` nil means self-signed.
    static func build(
        commonName: String, validity: CertificateValidity, subjectKey: OpaquePointer,
        issuer: OpaquePointer?, issuerKey: OpaquePointer, extensions: [(Int32, String)]
    ) throws(CredentialError) -> OpaquePointer {
        guard !commonName.isEmpty, commonName.utf8.count <= 64 else {
            throw .invalidCertificateRequest("the common name must be 1 to 64 bytes")
        }
        guard validity.notBefore < validity.notAfter else {
            throw .invalidCertificateRequest("notBefore must precede notAfter")
        }
        guard let certificate = X509_new() else { throw CredentialError.openSSL("X509_new") }
        do {
            try configure(
                certificate, commonName: commonName, validity: validity, subjectKey: subjectKey,
                issuer: issuer, issuerKey: issuerKey, extensions: extensions)
            return certificate
        } catch {
            X509_free(certificate)
            throw error
        }
    }

    private static func configure(
        _ certificate: OpaquePointer, commonName: String, validity: CertificateValidity, subjectKey: OpaquePointer,
        issuer: OpaquePointer?, issuerKey: OpaquePointer, extensions: [(Int32, String)]
    ) throws(CredentialError) {
        guard X509_set_version(certificate, 2) == 1 else { throw CredentialError.openSSL("X509_set_version") }
        try setRandomSerialNumber(certificate)
        guard ASN1_TIME_set(X509_getm_notBefore(certificate), time_t(validity.notBefore.timeIntervalSince1970)) != nil,
              ASN1_TIME_set(X509_getm_notAfter(certificate), time_t(validity.notAfter.timeIntervalSince1970)) != nil
        else { throw CredentialError.openSSL("ASN1_TIME_set") }
        guard X509_set_pubkey(certificate, subjectKey) == 1 else { throw CredentialError.openSSL("X509_set_pubkey") }
        let name = X509_get_subject_name(certificate)
        guard X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, commonName, -1, -1, 0) == 1 else {
            throw CredentialError.openSSL("X509_NAME_add_entry_by_txt")
        }
        let issuerName = issuer.map { X509_get_subject_name($0) } ?? name
        guard X509_set_issuer_name(certificate, issuerName) == 1 else { throw CredentialError.openSSL("X509_set_issuer_name") }

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer ?? certificate, certificate, nil, nil, 0)
        for (nid, value) in extensions {
            guard let item = X509V3_EXT_nconf_nid(nil, &context, nid, value) else {
                throw CredentialError.openSSL("X509V3_EXT_nconf_nid(\(value))")
            }
            defer { X509_EXTENSION_free(item) }
            guard X509_add_ext(certificate, item, -1) == 1 else { throw CredentialError.openSSL("X509_add_ext") }
        }
        guard X509_sign(certificate, issuerKey, EVP_sha256()) > 0 else { throw CredentialError.openSSL("X509_sign") }
    }

    /// 159 random bits, positive, as RFC 5280 §4.1.2.2 allows at most 20 octets.
    private static func setRandomSerialNumber(_ certificate: OpaquePointer) throws(CredentialError) {
        var bytes = [UInt8](repeating: 0, count: 20)
        guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else { throw CredentialError.openSSL("RAND_bytes") }
        bytes[0] &= 0x7F
        bytes[0] |= 0x01
        guard let number = BN_bin2bn(bytes, Int32(bytes.count), nil) else { throw CredentialError.openSSL("BN_bin2bn") }
        defer { BN_free(number) }
        guard let serial = BN_to_ASN1_INTEGER(number, nil) else { throw CredentialError.openSSL("BN_to_ASN1_INTEGER") }
        defer { ASN1_INTEGER_free(serial) }
        guard X509_set_serialNumber(certificate, serial) == 1 else { throw CredentialError.openSSL("X509_set_serialNumber") }
    }

    static func parseCertificate(_ pem: String) throws(CredentialError) -> OpaquePointer {
        let certificate = try PEMCodec.reading(Array(pem.utf8)) { bio in
            PEM_read_bio_X509(bio, nil, ES256KeyCheck.refusePassphrase, nil)
        }
        guard let certificate else {
            throw .malformedCertificate(source: "authority certificate", detail: CredentialError.takeOpenSSLErrors())
        }
        return certificate
    }

    static func pem(of certificate: OpaquePointer) throws(CredentialError) -> String {
        try PEMCodec.writing("PEM_write_bio_X509") { bio in PEM_write_bio_X509(bio, certificate) == 1 }
    }

    static func pkcs8PEM(of key: OpaquePointer) throws(CredentialError) -> String {
        try PEMCodec.writing("PEM_write_bio_PrivateKey") { bio in
            PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1
        }
    }
}
