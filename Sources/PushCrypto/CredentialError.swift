import Foundation

/// Why a key, certificate or identity could not be loaded, used or made.
///
/// `source` is a file path or a short label such as "PEM data"; details come
/// from OpenSSL's error queue, which names algorithms and reasons, never key
/// material. Passwords and key bytes never appear here.
package enum CredentialError: Error, Sendable, Equatable, CustomStringConvertible {
    case fileNotFound(path: String)
    case fileUnreadable(path: String, reason: String)
    case fileNotWritable(path: String, reason: String)
    case notAPrivateKey(source: String)
    case notAPublicKey(source: String)
    case encryptedPrivateKey(source: String)
    /// `needed` says what the key is for and what it must be.
    case wrongKeyType(source: String, found: String, needed: String)
    case wrongCurve(source: String, found: String)
    case malformedCertificate(source: String, detail: String)
    case malformedPKCS12(source: String, detail: String)
    case wrongPassword(source: String)
    case keyDoesNotMatchCertificate(certificate: String, key: String)
    case certificateExpired(subject: String, notAfter: Date)
    case certificateNotYetValid(subject: String, notBefore: Date)
    case invalidSignatureLength(Int)
    case invalidCertificateRequest(String)
    case openSSLFailure(operation: String, detail: String)

    package var description: String {
        switch self {
        case .fileNotFound(let path):
            return "\(path): no such file"
        case .fileUnreadable(let path, let reason):
            return "\(path): cannot be read (\(reason))"
        case .fileNotWritable(let path, let reason):
            return "\(path): cannot be written (\(reason))"
        case .notAPrivateKey(let source):
            return "\(source): not a PEM private key (a .p8 file starts with -----BEGIN PRIVATE KEY-----)"
        case .notAPublicKey(let source):
            return "\(source): not a PEM public key (expected -----BEGIN PUBLIC KEY-----)"
        case .encryptedPrivateKey(let source):
            return "\(source): the private key is encrypted; a .p8 signing key must be unencrypted PKCS#8 (as Apple issues it), and an encrypted certificate key needs its password (PGPUSH_CERT_PASSWORD)"
        case .wrongKeyType(let source, let found, let needed):
            return "\(source): a \(found) key; \(needed)"
        case .wrongCurve(let source, let found):
            return "\(source): an EC key on curve \(found); APNs provider tokens need P-256 (prime256v1)"
        case .malformedCertificate(let source, let detail):
            return "\(source): no usable PEM certificate (\(detail))"
        case .malformedPKCS12(let source, let detail):
            return "\(source): not a readable PKCS#12 (.p12) file (\(detail))"
        case .wrongPassword(let source):
            return "\(source): wrong password"
        case .keyDoesNotMatchCertificate(let certificate, let key):
            return "the private key in \(key) does not belong to the certificate in \(certificate)"
        case .certificateExpired(let subject, let notAfter):
            return "certificate \"\(subject)\" expired on \(Self.format(notAfter))"
        case .certificateNotYetValid(let subject, let notBefore):
            return "certificate \"\(subject)\" is not valid before \(Self.format(notBefore))"
        case .invalidSignatureLength(let length):
            return "an ES256 signature is 64 bytes (r‖s), got \(length)"
        case .invalidCertificateRequest(let reason):
            return "cannot issue certificate: \(reason)"
        case .openSSLFailure(let operation, let detail):
            return "\(operation) failed: \(detail)"
        }
    }

    private static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    /// A failure of `operation`, with what OpenSSL queued about it (the queue is emptied).
    package static func openSSL(_ operation: String) -> CredentialError {
        .openSSLFailure(operation: operation, detail: takeOpenSSLErrors())
    }

    /// Empties the thread's OpenSSL error queue into one line (see `OpenSSLErrors`).
    static func takeOpenSSLErrors() -> String {
        let queued = OpenSSLErrors.drain()
        return queued.isEmpty ? "no detail from OpenSSL" : queued
    }
}
