import COpenSSL
import Foundation

/// What an operator needs to know about an X509 certificate: who it names and when
/// it is valid. What an extension means (APNs topics and environments) is for the
/// code that knows the extension; `extensionData(_:_:)` hands it the bytes.
package struct CertificateDetails: Sendable {
    package let subject: String
    package let notBefore: Date
    package let notAfter: Date
    /// The subject's UID attribute (Apple's push certificates carry the bundle id there).
    let userID: String?

    package init(of certificate: OpaquePointer, source: String) throws(CredentialError) {
        subject = try Self.subject(of: certificate)
        guard let notBefore = Self.date(X509_get0_notBefore(certificate)),
              let notAfter = Self.date(X509_get0_notAfter(certificate))
        else {
            throw .malformedCertificate(source: source, detail: "unreadable validity dates")
        }
        self.notBefore = notBefore
        self.notAfter = notAfter
        userID = Self.userID(of: certificate)
    }

    /// Whether the certificate carries the extension `oid` (dotted form).
    static func hasExtension(_ oid: String, _ certificate: OpaquePointer) -> Bool {
        guard let object = OBJ_txt2obj(oid, 1) else { return false }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(certificate, object, -1) >= 0
    }

    private static func subject(of certificate: OpaquePointer) throws(CredentialError) -> String {
        // RFC 2253 escaping, readable separators, UTF-8 kept as is.
        let flags = UInt(ASN1_STRFLGS_ESC_2253 | ASN1_STRFLGS_ESC_CTRL | ASN1_STRFLGS_UTF8_CONVERT
            | ASN1_STRFLGS_DUMP_UNKNOWN | ASN1_STRFLGS_DUMP_DER) | UInt(XN_FLAG_SEP_CPLUS_SPC)
        return try PEMCodec.writing("X509_NAME_print_ex") { bio in
            X509_NAME_print_ex(bio, X509_get_subject_name(certificate), 0, flags) >= 0
        }
    }

    private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    private static func userID(of certificate: OpaquePointer) -> String? {
        guard let name = X509_get_subject_name(certificate) else { return nil }
        let index = X509_NAME_get_index_by_NID(name, NID_userId, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index),
              let value = X509_NAME_ENTRY_get_data(entry)
        else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&utf8, value)
        guard length >= 0, let utf8 else { return nil }
        defer { pgpush_OPENSSL_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }

    /// The DER content of the extension `oid` (dotted form); nil when the certificate has none.
    static func extensionData(_ oid: String, _ certificate: OpaquePointer) -> [UInt8]? {
        guard let oid = OBJ_txt2obj(oid, 1) else { return nil }
        defer { ASN1_OBJECT_free(oid) }
        let index = X509_get_ext_by_OBJ(certificate, oid, -1)
        guard index >= 0, let extensionEntry = X509_get_ext(certificate, index),
              let value = X509_EXTENSION_get_data(extensionEntry),
              let data = ASN1_STRING_get0_data(value)
        else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(value))))
    }
}
