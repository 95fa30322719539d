import HTTP2TLS
import PushCrypto
import Testing

/// Runs once `ClientIdentity` can load PEM files (the credentials work); skipped before.
private let identityAvailable: Bool = {
    guard let certificates = try? TestCertificates.get() else { return false }
    return (try? ClientIdentity.loadPEM(certificatePath: certificates.serverCertificate, keyPath: certificates.serverKey)) != nil
}()

@Suite("TLS client certificates")
struct ClientCertificateTests {
    @Test("a client identity is presented and its subject reaches the handler", .enabled(if: identityAvailable),
          .timeLimit(.minutes(5)))
    func clientIdentity() async throws {
        let certificates = try TestCertificates.get()
        let server = try makeServer(ClosureHandler { request, responder in
            responder.respond(status: 200, body: Array((request.peerCertificateSubject ?? "none").utf8))
        }, clientCertificates: .require(trustedCAFile: certificates.caFile))
        defer { server.shutdown() }
        let identity = try ClientIdentity.loadPEM(certificatePath: certificates.serverCertificate, keyPath: certificates.serverKey)
        let configuration = HTTP2ClientConfiguration(tls: try ClientTLSContext(extraCAFile: certificates.caFile, identity: identity))
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "localhost", port: server.port, configuration: configuration)
        let response = try await connection.send(request(1))
        #expect(response.status == 200)
        #expect(response.body == Array("CN=server".utf8))
    }
}
