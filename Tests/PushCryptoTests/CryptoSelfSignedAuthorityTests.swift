import PGPushTestSupport
import Foundation
import Testing
@testable import PushCrypto

@Suite("Self-signed authority")
struct CryptoSelfSignedAuthorityTests {
    @Test("the server certificate verifies against the CA with openssl verify and names localhost, 127.0.0.1 and ::1")
    func serverCertificateVerifies() throws {
        let scratch = try ScratchDirectory()
        let authority = try SelfSignedAuthority.generate()
        let server = try authority.issueServerCertificate()
        try scratch.write(authority.certificatePEM, to: "ca.pem")
        try scratch.write(server.certificatePEM, to: "server.pem")
        try scratch.write(server.privateKeyPEM, to: "server.key")

        let verified = try OpenSSLCommand.run(
            ["verify", "-CAfile", "ca.pem", "-purpose", "sslserver", "server.pem"], in: scratch.path)
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output.contains("server.pem: OK"))
        let hostChecked = try OpenSSLCommand.run(
            ["verify", "-CAfile", "ca.pem", "-verify_hostname", "localhost", "-verify_ip", "::1", "server.pem"], in: scratch.path)
        #expect(hostChecked.status == 0, "\(hostChecked.output)")
        let otherHost = try OpenSSLCommand.run(
            ["verify", "-CAfile", "ca.pem", "-verify_hostname", "api.push.apple.com", "server.pem"], in: scratch.path)
        #expect(otherHost.status != 0)

        let text = try OpenSSLCommand.succeed(["x509", "-in", "server.pem", "-noout", "-text"], in: scratch.path)
        #expect(text.contains("DNS:localhost"))
        #expect(text.contains("IP Address:127.0.0.1"))
        #expect(text.contains("IP Address:0:0:0:0:0:0:0:1"))
        #expect(text.contains("TLS Web Server Authentication"))
        #expect(text.contains("CA:FALSE"))
        #expect(text.contains("ecdsa-with-SHA256"))

        let caText = try OpenSSLCommand.succeed(["x509", "-in", "ca.pem", "-noout", "-text"], in: scratch.path)
        #expect(caText.contains("CA:TRUE"))
        #expect(caText.contains("Certificate Sign"))

        // The key belongs to the certificate (ClientIdentity checks the pair), and openssl reads it.
        _ = try ClientIdentity.loadPEM(certificatePath: scratch.file("server.pem"), keyPath: scratch.file("server.key"))
        try OpenSSLCommand.succeed(["pkey", "-in", "server.key", "-check", "-noout"], in: scratch.path)
    }

    @Test("custom names go into the certificate; another authority's CA does not verify it")
    func customNamesAndIsolation() throws {
        let scratch = try ScratchDirectory()
        let authority = try SelfSignedAuthority.generate(commonName: "pgpush demo CA")
        let stranger = try SelfSignedAuthority.generate()
        let server = try authority.issueServerCertificate(
            commonName: "apns.test", dnsNames: ["apns.test", "*.apns.test"], ipAddresses: ["10.1.2.3"])
        try scratch.write(stranger.certificatePEM, to: "stranger.pem")
        try scratch.write(authority.certificatePEM, to: "ca.pem")
        try scratch.write(server.certificatePEM, to: "server.pem")

        let text = try OpenSSLCommand.succeed(["x509", "-in", "server.pem", "-noout", "-text"], in: scratch.path)
        #expect(text.contains("DNS:apns.test, DNS:*.apns.test, IP Address:10.1.2.3"))
        #expect(text.contains("Issuer: CN = pgpush demo CA"))
        let rejected = try OpenSSLCommand.run(["verify", "-CAfile", "stranger.pem", "server.pem"], in: scratch.path)
        #expect(rejected.status != 0)
        #expect(try OpenSSLCommand.run(["verify", "-CAfile", "ca.pem", "server.pem"], in: scratch.path).status == 0)
    }

    @Test("a client certificate verifies for client authentication")
    func clientCertificate() throws {
        let scratch = try ScratchDirectory()
        let authority = try SelfSignedAuthority.generate()
        let client = try authority.issueClientCertificate(commonName: "Apple Push Services: com.example.app")
        try scratch.write(authority.certificatePEM, to: "ca.pem")
        try scratch.write(client.certificatePEM, to: "client.pem")
        let verified = try OpenSSLCommand.run(["verify", "-CAfile", "ca.pem", "-purpose", "sslclient", "client.pem"], in: scratch.path)
        #expect(verified.status == 0, "\(verified.output)")
    }

    @Test("a validity window in the past gives an expired certificate that openssl rejects")
    func expiredValidity() throws {
        let scratch = try ScratchDirectory()
        let authority = try SelfSignedAuthority.generate()
        let longAgo = Date(timeIntervalSince1970: 1_600_000_000)
        let server = try authority.issueServerCertificate(validity: CertificateValidity.days(10, from: longAgo))
        try scratch.write(authority.certificatePEM, to: "ca.pem")
        try scratch.write(server.certificatePEM, to: "server.pem")
        try scratch.write(server.privateKeyPEM, to: "server.key")
        let verified = try OpenSSLCommand.run(["verify", "-CAfile", "ca.pem", "server.pem"], in: scratch.path)
        #expect(verified.status != 0)
        #expect(verified.output.contains("certificate has expired"))
        let identity = try ClientIdentity.loadPEM(certificatePath: scratch.file("server.pem"), keyPath: scratch.file("server.key"))
        #expect(identity.notAfter == longAgo.addingTimeInterval(10 * 86_400))
        #expect(identity.isExpired(now: Date()))
    }

    @Test("an authority saved as PEM and loaded again still issues verifiable certificates")
    func reloadedAuthority() throws {
        let scratch = try ScratchDirectory()
        let original = try SelfSignedAuthority.generate()
        let reloaded = SelfSignedAuthority(certificatePEM: original.certificatePEM, privateKeyPEM: original.privateKeyPEM)
        let server = try reloaded.issueServerCertificate()
        try scratch.write(original.certificatePEM, to: "ca.pem")
        try scratch.write(server.certificatePEM, to: "server.pem")
        #expect(try OpenSSLCommand.run(["verify", "-CAfile", "ca.pem", "server.pem"], in: scratch.path).status == 0)
    }

    @Test("names that would corrupt the certificate request are refused")
    func invalidNames() throws {
        let authority = try SelfSignedAuthority.generate()
        #expect(throws: CredentialError.invalidCertificateRequest("\"a,DNS:evil\" is not a DNS name")) {
            try authority.issueServerCertificate(dnsNames: ["a,DNS:evil"])
        }
        #expect(throws: CredentialError.invalidCertificateRequest("\"300.1.1.1\" is not an IP address")) {
            try authority.issueServerCertificate(ipAddresses: ["300.1.1.1"])
        }
        #expect(throws: CredentialError.self) { try authority.issueServerCertificate(dnsNames: [], ipAddresses: []) }
        #expect(throws: CredentialError.self) { try authority.issueServerCertificate(dnsNames: ["bad..name"]) }
        #expect(throws: CredentialError.self) {
            try authority.issueServerCertificate(validity: CertificateValidity(notBefore: Date(), notAfter: Date().addingTimeInterval(-1)))
        }
    }
}
