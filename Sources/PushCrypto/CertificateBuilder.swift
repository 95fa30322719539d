import COpenSSL
import Foundation

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
            PEM_read_bio_X509(bio, nil, PEMCodec.refusePassphrase, nil)
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
