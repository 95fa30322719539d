import COpenSSL
import Foundation

/// A throwaway certificate authority made at start-up, so the APNs simulator and
/// the demo can serve real, verified TLS on localhost: clients trust only its
/// certificate (`PGPUSH_CA_FILE`), and verification stays on. EC P-256, SHA-256.
package struct SelfSignedAuthority: Sendable {
    package let certificatePEM: String
    /// Unencrypted PKCS#8; secret material.
    package let privateKeyPEM: String

    /// Reuses an authority saved earlier.
    package init(certificatePEM: String, privateKeyPEM: String) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
    }

    /// A new authority with a fresh key.
    package static func generate(
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
    package func issueServerCertificate(
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
    package func issueClientCertificate(
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
