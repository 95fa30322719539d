import Foundation

/// What a simulator serves TLS with: a server certificate for 127.0.0.1 and localhost from an
/// authority made for it alone, and that authority's certificate in a folder of its own, for
/// clients to trust. Removed with `remove()` when the simulator stops.
package struct TemporaryServerIdentity: Sendable {
    package let certificatePEM: String
    package let privateKeyPEM: String
    /// The authority's certificate (PEM).
    package let caPath: String
    package let folder: URL

    /// `name` names the authority ("pgpush <name> CA") and the folder.
    package init(name: String) throws {
        let authority = try SelfSignedAuthority.generate(commonName: "pgpush \(name) CA")
        let issued = try authority.issueServerCertificate()
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        caPath = folder.appendingPathComponent("ca.pem").path
        try Data(authority.certificatePEM.utf8).write(to: URL(fileURLWithPath: caPath))
        certificatePEM = issued.certificatePEM
        privateKeyPEM = issued.privateKeyPEM
    }

    package func remove() {
        try? FileManager.default.removeItem(at: folder)
    }
}
