import Foundation

/// Why the server's certificate failed verification in the TLS handshake: OpenSSL's
/// verify result and its text, and the certificate the server sent (who it names and
/// until when it is valid), so that an operator can tell an expired certificate from a
/// wrong host name or an unknown CA without a packet capture.
package struct CertificateRejection: Sendable, Equatable, CustomStringConvertible {
    /// The server's own (leaf) certificate, as far as it could be read.
    package struct Certificate: Sendable, Equatable {
        /// Subject, RFC 2253 escaping, e.g. "CN=api.push.apple.com, O=Apple Inc.".
        package var subject: String
        package var notBefore: Date
        package var notAfter: Date

        package init(subject: String, notBefore: Date, notAfter: Date) {
            self.subject = subject
            self.notBefore = notBefore
            self.notAfter = notAfter
        }
    }

    /// `SSL_get_verify_result`: an `X509_V_ERR_*` code, e.g. 10 for an expired certificate.
    package var verifyResult: Int
    /// `X509_verify_cert_error_string` of it, e.g. "certificate has expired", "hostname mismatch".
    package var reason: String
    /// Nil when the server sent none, or it could not be read.
    package var certificate: Certificate?

    package init(verifyResult: Int, reason: String, certificate: Certificate?) {
        self.verifyResult = verifyResult
        self.reason = reason
        self.certificate = certificate
    }

    package var description: String {
        var text = "certificate verify failed: \(reason)"
        if let certificate {
            text += " (server certificate \(certificate.subject), valid \(Self.time(certificate.notBefore))"
                + " to \(Self.time(certificate.notAfter)))"
        }
        return text
    }

    static func time(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
