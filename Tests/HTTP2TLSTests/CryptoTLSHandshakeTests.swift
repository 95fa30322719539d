import PGPushTestSupport
import COpenSSL
import Foundation
import Testing
@testable import HTTP2TLS
@testable import PushCrypto

/// Proves that what the crypto code produces works in a real TLS handshake:
/// a server certificate from `SelfSignedAuthority`, and a client identity
/// installed with `ClientIdentity.install(into:)`, over an in-memory BIO pair.
@Suite("Credentials in a TLS handshake")
struct CryptoTLSHandshakeTests {
    @Test("mutual TLS: the server certificate verifies for localhost and the server sees the client's certificate")
    func mutualTLS() throws {
        let scratch = try ScratchDirectory()
        let authority = try SelfSignedAuthority.generate()
        let caFile = try scratch.write(authority.certificatePEM, to: "ca.pem")
        let server = try authority.issueServerCertificate()
        try scratch.write(server.certificatePEM, to: "server.pem")
        try scratch.write(server.privateKeyPEM, to: "server.key")
        let client = try authority.issueClientCertificate(commonName: "Apple Push Services: com.example.app")
        try scratch.write(client.certificatePEM + client.privateKeyPEM, to: "client.pem")

        let serverIdentity = try ClientIdentity.loadPEM(certificatePath: scratch.file("server.pem"), keyPath: scratch.file("server.key"))
        let clientIdentity = try ClientIdentity.loadPEM(certificatePath: scratch.file("client.pem"), keyPath: scratch.file("client.pem"))

        let outcome = try Handshake.run(
            serverIdentity: serverIdentity, clientIdentity: clientIdentity, caFile: caFile, hostName: "localhost")
        #expect(outcome.completed)
        #expect(outcome.clientVerifyResult == Int(X509_V_OK))
        #expect(outcome.serverVerifyResult == Int(X509_V_OK))
        #expect(outcome.clientSubjectSeenByServer?.contains("CN=Apple Push Services: com.example.app") == true)
    }

    @Test("the client refuses the server certificate for a host name it does not cover")
    func wrongHostName() throws {
        let scratch = try ScratchDirectory()
        let authority = try SelfSignedAuthority.generate()
        let caFile = try scratch.write(authority.certificatePEM, to: "ca.pem")
        let server = try authority.issueServerCertificate()
        try scratch.write(server.certificatePEM + server.privateKeyPEM, to: "server.pem")
        let serverIdentity = try ClientIdentity.loadPEM(certificatePath: scratch.file("server.pem"), keyPath: scratch.file("server.pem"))

        let outcome = try Handshake.run(
            serverIdentity: serverIdentity, clientIdentity: nil, caFile: caFile, hostName: "api.push.apple.com")
        #expect(!outcome.completed)
        #expect(outcome.clientVerifyResult == Int(X509_V_ERR_HOSTNAME_MISMATCH))
    }
}

/// A client and a server SSL joined by a BIO pair, stepped until both finish or one fails.
private enum Handshake {
    struct Outcome {
        var completed: Bool
        var clientVerifyResult: Int
        var serverVerifyResult: Int
        var clientSubjectSeenByServer: String?
    }

    static func run(serverIdentity: ClientIdentity, clientIdentity: ClientIdentity?, caFile: String, hostName: String) throws -> Outcome {
        let serverContext = try #require(SSL_CTX_new(TLS_server_method()))
        defer { SSL_CTX_free(serverContext) }
        try serverIdentity.install(into: serverContext)
        #expect(SSL_CTX_load_verify_locations(serverContext, caFile, nil) == 1)
        SSL_CTX_set_verify(serverContext, clientIdentity == nil ? SSL_VERIFY_NONE : SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)

        let clientContext = try #require(SSL_CTX_new(TLS_client_method()))
        defer { SSL_CTX_free(clientContext) }
        if let clientIdentity { try clientIdentity.install(into: clientContext) }
        #expect(SSL_CTX_load_verify_locations(clientContext, caFile, nil) == 1)
        SSL_CTX_set_verify(clientContext, SSL_VERIFY_PEER, nil)

        let serverSSL = try #require(SSL_new(serverContext))
        defer { SSL_free(serverSSL) }
        let clientSSL = try #require(SSL_new(clientContext))
        defer { SSL_free(clientSSL) }
        #expect(SSL_set1_host(clientSSL, hostName) == 1)

        var clientEnd: OpaquePointer?
        var serverEnd: OpaquePointer?
        #expect(BIO_new_bio_pair(&clientEnd, 0, &serverEnd, 0) == 1)
        SSL_set_bio(clientSSL, clientEnd, clientEnd)
        SSL_set_bio(serverSSL, serverEnd, serverEnd)
        SSL_set_connect_state(clientSSL)
        SSL_set_accept_state(serverSSL)

        var clientDone = false
        var serverDone = false
        var failed = false
        for _ in 0..<50 where !(clientDone && serverDone) && !failed {
            if !clientDone { clientDone = step(clientSSL, failed: &failed) }
            if !serverDone { serverDone = step(serverSSL, failed: &failed) }
        }
        _ = CredentialError.takeOpenSSLErrors()

        var subject: String?
        if let peer = SSL_get1_peer_certificate(serverSSL) {
            defer { X509_free(peer) }
            subject = try CertificateDetails(of: peer, source: "peer").subject
        }
        return Outcome(
            completed: clientDone && serverDone,
            clientVerifyResult: SSL_get_verify_result(clientSSL),
            serverVerifyResult: SSL_get_verify_result(serverSSL),
            clientSubjectSeenByServer: subject)
    }

    /// True once this side's handshake is complete; sets `failed` on a fatal error.
    private static func step(_ ssl: OpaquePointer, failed: inout Bool) -> Bool {
        let result = SSL_do_handshake(ssl)
        if result == 1 { return true }
        let error = SSL_get_error(ssl, result)
        if error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE { failed = true }
        return false
    }
}
