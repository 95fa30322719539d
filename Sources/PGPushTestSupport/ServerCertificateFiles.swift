import Foundation
import PushCrypto

/// A test CA and a server certificate for 127.0.0.1 it issued, written as PEM files in a
/// directory: the trust anchor to give the client, the chain and key to give the server.
package struct ServerCertificateFiles: Sendable {
    package let caFile: String
    package let chainFile: String
    package let keyFile: String
    package let validity: CertificateValidity

    package init(in directory: URL, name: String, commonName: String = "localhost",
                validity: CertificateValidity = .days(30)) throws {
        let authority = try SelfSignedAuthority.generate(commonName: "pgpush \(name) test CA")
        let issued = try authority.issueServerCertificate(commonName: commonName, ipAddresses: ["127.0.0.1"], validity: validity)
        caFile = directory.appendingPathComponent("\(name)-ca.pem").path
        chainFile = directory.appendingPathComponent("\(name).pem").path
        keyFile = directory.appendingPathComponent("\(name)-key.pem").path
        self.validity = validity
        try Data(authority.certificatePEM.utf8).write(to: URL(fileURLWithPath: caFile))
        try Data(issued.certificatePEM.utf8).write(to: URL(fileURLWithPath: chainFile))
        try Data(issued.privateKeyPEM.utf8).write(to: URL(fileURLWithPath: keyFile))
    }

    /// `expired.test`, valid for 30 days up to a day ago (whole seconds, as a certificate
    /// stores them): what a client meets at a server whose certificate ran out.
    package static func expired(in directory: URL) throws -> ServerCertificateFiles {
        let day: TimeInterval = 86_400
        let notAfter = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - day).rounded(.down))
        return try ServerCertificateFiles(in: directory, name: "expired", commonName: "expired.test",
                                          validity: CertificateValidity(notBefore: notAfter.addingTimeInterval(-30 * day),
                                                                        notAfter: notAfter))
    }
}
