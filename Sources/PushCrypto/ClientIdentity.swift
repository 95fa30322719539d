import COpenSSL
import Foundation

/// A TLS client certificate and its private key (APNs certificate authentication).
///
/// Loading checks that the key belongs to the certificate but accepts an expired
/// one, so `pgpush doctor` can report it; callers that are about to connect call
/// `validate(now:)`, which refuses it with a clear error.
///
/// The simulator uses the same type for its server certificate (`fromPEM`).
///
/// What Apple's extensions say (APNs topics and environments) is read in APNsClient,
/// which knows what they mean; HTTP2TLS installs the identity into its TLS context.
///
/// `@unchecked Sendable`: immutable after loading; the X509 and EVP_PKEY objects are
/// only read, also by the code `withOpenSSLObjects` lends them to (SSL_CTX_use_* takes
/// its own references), and are freed in `deinit`.
package final class ClientIdentity: @unchecked Sendable, CustomStringConvertible {
    private let certificate: OpaquePointer
    private let privateKey: OpaquePointer
    private let chain: [OpaquePointer]
    private let details: CertificateDetails

    /// The certificate's subject, e.g. `UID=com.example.app, CN=Apple Push Services: com.example.app, ...`.
    package var subject: String { details.subject }
    package var notBefore: Date { details.notBefore }
    package var notAfter: Date { details.notAfter }
    /// The subject's UID attribute, if it has one.
    package var subjectUserID: String? { details.userID }

    /// Whether the certificate carries the extension `oid` (dotted form).
    package func hasExtension(_ oid: String) -> Bool {
        CertificateDetails.hasExtension(oid, certificate)
    }

    /// The DER content of the certificate's extension `oid` (dotted form); nil when it has none.
    package func extensionData(_ oid: String) -> [UInt8]? {
        CertificateDetails.extensionData(oid, certificate)
    }

    /// Takes ownership of `certificate`, `privateKey` and every element of `chain`.
    private init(certificate: OpaquePointer, privateKey: OpaquePointer, chain: [OpaquePointer], details: CertificateDetails) {
        self.certificate = certificate
        self.privateKey = privateKey
        self.chain = chain
        self.details = details
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(privateKey)
        chain.forEach { X509_free($0) }
    }

    /// Loads a PKCS#12 file (certificate + key) protected by `password`.
    package static func loadPKCS12(path: String, password: String?) throws -> ClientIdentity {
        let bytes = try CredentialFile.contents(of: path)
        return try PKCS12Reader.read(bytes, password: password, source: path)
    }

    /// Loads `PGPUSH_CERT_FILE`: PEM text (certificate and key in the one file) or else PKCS#12.
    /// `password` opens the PKCS#12 file or an encrypted PEM key.
    package static func load(path: String, password: String?) throws -> ClientIdentity {
        let bytes = try CredentialFile.contents(of: path)
        if String(decoding: bytes.prefix(64 * 1024), as: UTF8.self).contains("-----BEGIN ") {
            return try fromPEM(certificateBytes: bytes, keyBytes: bytes, password: password, certificateSource: path, keySource: path)
        }
        return try PKCS12Reader.read(bytes, password: password, source: path)
    }

    /// Loads a PEM certificate and a PEM private key (they may be the same file).
    /// Extra certificates after the first in the certificate file are sent as the chain.
    package static func loadPEM(certificatePath: String, keyPath: String) throws -> ClientIdentity {
        try loadPEM(certificatePath: certificatePath, keyPath: keyPath, password: nil)
    }

    /// As `loadPEM(certificatePath:keyPath:)`, for a key that may be encrypted with `password`.
    package static func loadPEM(certificatePath: String, keyPath: String, password: String?) throws -> ClientIdentity {
        let certificateBytes = try CredentialFile.contents(of: certificatePath)
        let keyBytes = certificatePath == keyPath ? certificateBytes : try CredentialFile.contents(of: keyPath)
        return try fromPEM(
            certificateBytes: certificateBytes, keyBytes: keyBytes, password: password,
            certificateSource: certificatePath, keySource: keyPath)
    }

    /// An identity from PEM text in memory (e.g. an `IssuedCertificate` for the simulator's server).
    package static func fromPEM(certificatePEM: String, privateKeyPEM: String) throws -> ClientIdentity {
        try fromPEM(
            certificateBytes: Array(certificatePEM.utf8), keyBytes: Array(privateKeyPEM.utf8), password: nil,
            certificateSource: "certificate PEM", keySource: "private key PEM")
    }

    private static func fromPEM(
        certificateBytes: [UInt8], keyBytes: [UInt8], password: String?, certificateSource: String, keySource: String
    ) throws(CredentialError) -> ClientIdentity {
        var certificates = try readCertificates(certificateBytes, source: certificateSource)
        let leaf = certificates.removeFirst()
        let key: OpaquePointer
        do {
            key = try PrivateKeyReader.read(keyBytes, password: password, source: keySource)
        } catch {
            X509_free(leaf)
            certificates.forEach { X509_free($0) }
            throw error
        }
        return try make(certificate: leaf, privateKey: key, chain: certificates, certificateSource: certificateSource, keySource: keySource)
    }

    /// Builds an identity from objects the caller owns (ownership passes here, also on failure),
    /// checking that the key belongs to the certificate.
    static func make(
        certificate: OpaquePointer, privateKey: OpaquePointer, chain: [OpaquePointer],
        certificateSource: String, keySource: String
    ) throws(CredentialError) -> ClientIdentity {
        func release() {
            X509_free(certificate)
            EVP_PKEY_free(privateKey)
            chain.forEach { X509_free($0) }
        }
        guard X509_check_private_key(certificate, privateKey) == 1 else {
            _ = CredentialError.takeOpenSSLErrors()
            release()
            throw .keyDoesNotMatchCertificate(certificate: certificateSource, key: keySource)
        }
        let details: CertificateDetails
        do {
            details = try CertificateDetails(of: certificate, source: certificateSource)
        } catch {
            release()
            throw error
        }
        // Decoders may queue errors for formats they tried and rejected on the way to success;
        // left there, they would turn the TLS layer's next SSL_get_error into SSL_ERROR_SSL.
        ERR_clear_error()
        return ClientIdentity(certificate: certificate, privateKey: privateKey, chain: chain, details: details)
    }

    /// True once `now` is past the certificate's notAfter.
    package func isExpired(now: Date = Date()) -> Bool {
        now > notAfter
    }

    /// Whole days left before expiry (negative once expired), for warnings and `pgpush doctor`.
    package func daysUntilExpiry(now: Date = Date()) -> Int {
        Int((notAfter.timeIntervalSince(now) / 86_400).rounded(.down))
    }

    /// Throws when the certificate cannot be used at `now` (expired or not yet valid).
    package func validate(now: Date = Date()) throws(CredentialError) {
        if isExpired(now: now) {
            throw .certificateExpired(subject: subject, notAfter: notAfter)
        }
        if now < notBefore {
            throw .certificateNotYetValid(subject: subject, notBefore: notBefore)
        }
    }

    /// Lends the certificate, private key and chain (X509, EVP_PKEY, X509s) to `body`, which
    /// only reads them or takes references of its own; they stay owned by the identity.
    package func withOpenSSLObjects<Result>(
        _ body: (_ certificate: OpaquePointer, _ privateKey: OpaquePointer, _ chain: [OpaquePointer]) throws -> Result
    ) rethrows -> Result {
        try body(certificate, privateKey, chain)
    }

    /// Subject and expiry only; never key material.
    package var description: String {
        "ClientIdentity(\(subject), expires \(notAfter.formatted(.iso8601)))"
    }

    private static func readCertificates(_ bytes: [UInt8], source: String) throws(CredentialError) -> [OpaquePointer] {
        let certificates = try PEMCodec.reading(bytes) { bio in
            var found: [OpaquePointer] = []
            while let certificate = PEM_read_bio_X509(bio, nil, PEMCodec.refusePassphrase, nil) {
                found.append(certificate)
            }
            return found
        }
        // Reading stops with a "no start line" error at the end of the data; it is not a failure.
        let detail = CredentialError.takeOpenSSLErrors()
        guard !certificates.isEmpty else {
            throw .malformedCertificate(source: source, detail: detail)
        }
        return certificates
    }
}
