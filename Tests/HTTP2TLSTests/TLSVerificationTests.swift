import Foundation
import HTTP2TLS
import PGPushTestSupport
import PushCrypto
import Testing

@Suite("TLS: verification, ALPN and protocol version are enforced")
struct TLSVerificationTests {
    private func connectError(host: String = "localhost", port: Int, configuration: HTTP2ClientConfiguration) async throws -> ConnectError? {
        let client = try HTTP2Client()
        defer { client.shutdown() }
        do throws(ConnectError) {
            let connection = try await client.connect(host: host, port: port, configuration: configuration)
            connection.close(graceful: false)
            return nil
        } catch {
            return error
        }
    }

    @Test("a certificate for localhost from the trusted CA is accepted by name and by IP")
    func validCertificate() async throws {
        let server = try makeServer(echoHandler)
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        for host in ["localhost", "127.0.0.1"] {
            let connection = try await client.connect(host: host, port: server.port, configuration: try clientConfiguration())
            #expect(try await connection.send(request(1)).status == 200)
        }
    }

    @Test("a certificate for another host name is refused")
    func wrongHostName() async throws {
        let certificates = try TestCertificates.get()
        let server = try makeServer(echoHandler, certificate: certificates.wrongHostCertificate, key: certificates.wrongHostKey)
        defer { server.shutdown() }
        let error = try await connectError(port: server.port, configuration: try clientConfiguration())
        guard case .certificateRejected(let rejection) = error else {
            Issue.record("expected the certificate to be rejected, got \(String(describing: error))")
            return
        }
        #expect(rejection.reason == "hostname mismatch")
        // The certificate's own name is what an operator compares with the host name.
        #expect(rejection.certificate?.subject == "CN=wronghost", "\(rejection)")
        #expect(String(describing: error).contains("hostname mismatch"))
        #expect(server.statistics.requestsReceived == 0)
    }

    @Test("an expired server certificate from a trusted CA is refused")
    func expiredCertificate() async throws {
        let authority = try SelfSignedAuthority.generate()
        let day: TimeInterval = 86_400
        let notAfter = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - day).rounded(.down))
        let expired = try authority.issueServerCertificate(
            commonName: "expired.test", validity: CertificateValidity(notBefore: notAfter.addingTimeInterval(-30 * day), notAfter: notAfter))
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-expired-ca-\(UUID()).pem").path
        try Data(authority.certificatePEM.utf8).write(to: URL(fileURLWithPath: caFile))
        defer { try? FileManager.default.removeItem(atPath: caFile) }
        let server = try HTTP2Server(configuration: HTTP2ServerConfiguration(certificateChain: .text(expired.certificatePEM),
                                                                             privateKey: .text(expired.privateKeyPEM)),
                                     handler: echoHandler)
        defer { server.shutdown() }
        let error = try await connectError(port: server.port, configuration: try clientConfiguration(trusting: caFile))
        guard case .certificateRejected(let rejection) = error else {
            Issue.record("expected the certificate to be rejected, got \(String(describing: error))")
            return
        }
        // OpenSSL's verify result, and the certificate it was about: who and until when.
        #expect(rejection.verifyResult == 10)  // X509_V_ERR_CERT_HAS_EXPIRED
        #expect(rejection.reason == "certificate has expired")
        #expect(rejection.certificate?.subject == "CN=expired.test", "\(rejection)")
        #expect(rejection.certificate?.notAfter == notAfter, "\(rejection)")
        let text = String(describing: error)
        #expect(text.contains("certificate has expired") && text.contains("CN=expired.test"), "\(text)")
        #expect(server.statistics.requestsReceived == 0)
    }

    @Test("a certificate from an unknown CA is refused, with or without an extra CA file")
    func unknownCA() async throws {
        let certificates = try TestCertificates.get()
        let server = try makeServer(echoHandler, certificate: certificates.otherCAServerCertificate, key: certificates.otherCAServerKey)
        defer { server.shutdown() }
        for configuration in [try clientConfiguration(), HTTP2ClientConfiguration(tls: try ClientTLSContext())] {
            let error = try await connectError(port: server.port, configuration: configuration)
            guard case .certificateRejected(let rejection) = error else {
                Issue.record("expected the certificate to be rejected, got \(String(describing: error))")
                continue
            }
            #expect(rejection.reason.contains("issuer certificate"), "\(rejection)")
            #expect(rejection.certificate?.subject == "CN=otherserver", "\(rejection)")
            #expect(String(describing: error).contains("certificate verify failed"))
        }
    }

    @Test("a server that does not agree to ALPN h2 is refused", .enabled(if: ChildProcess.tool("openssl") != nil))
    func noALPN() async throws {
        let error = try await withOpenSSLServer([]) { port in
            try await connectError(host: "127.0.0.1", port: port, configuration: try clientConfiguration())
        }
        #expect(error == .alpnNotNegotiated(selected: nil))
    }

    @Test("a server that offers only http/1.1 is refused as not agreeing to ALPN h2", .enabled(if: ChildProcess.tool("openssl") != nil))
    func onlyHTTP1() async throws {
        // OpenSSL's server answers a client without a protocol in common with the fatal
        // no_application_protocol alert instead of completing the handshake.
        let error = try await withOpenSSLServer(["-alpn", "http/1.1"]) { port in
            try await connectError(host: "127.0.0.1", port: port, configuration: try clientConfiguration())
        }
        #expect(error == .alpnNotNegotiated(selected: nil))
    }

    @Test("a server limited to TLS 1.1 is refused", .enabled(if: ChildProcess.tool("openssl") != nil))
    func oldTLSVersion() async throws {
        let error = try await withOpenSSLServer(["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0", "-alpn", "h2"]) { port in
            try await connectError(host: "127.0.0.1", port: port, configuration: try clientConfiguration())
        }
        guard case .tlsHandshakeFailed(let detail) = error else {
            Issue.record("expected a TLS failure, got \(String(describing: error))")
            return
        }
        #expect(detail.contains("version") || detail.contains("protocol"))
    }

    @Test("a peer that stops answering is detected by PING and its requests may have been processed",
          .enabled(if: ChildProcess.tool("openssl") != nil), .timeLimit(.minutes(5)))
    func pingTimeout() async throws {
        // openssl s_server completes TLS with ALPN h2 and then stays silent.
        try await withOpenSSLServer(["-alpn", "h2"]) { port in
            let client = try HTTP2Client()
            defer { client.shutdown() }
            var configuration = try clientConfiguration()
            // The interval leaves the request ample time to go out first, even on a loaded machine.
            configuration.pingInterval = .seconds(3)
            configuration.pingTimeout = .seconds(1)
            let connection = try await client.connect(host: "127.0.0.1", port: port, configuration: configuration)
            let failure = await failure(of: connection, request(1))
            // Written before the PING went unanswered: may have been processed. On a machine
            // too loaded to write it within the PING interval it was never sent, and says so.
            #expect(failure?.cause == .connectionClosed(.pingTimeout))
            #expect(connection.status.phase == .closed(.pingTimeout))
        }
    }

    @Test("a peer that sends what is not HTTP/2 ends the connection as a protocol error, not a local close",
          .enabled(if: ChildProcess.tool("openssl") != nil), .timeLimit(.minutes(5)))
    func garbageFromThePeer() async throws {
        let certificates = try TestCertificates.get()
        let server = try await OpenSSLServer.start(certificateChain: certificates.serverCertificate,
                                                   privateKey: certificates.serverKey, ["-alpn", "h2"])
        defer { server.stop() }
        let port = server.port
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: port, configuration: try clientConfiguration())
        // s_server passes its stdin to the client it is serving: bytes that are no SETTINGS frame.
        try server.input.write(contentsOf: Data("this is not HTTP/2 at all\n".utf8))
        let reason = await closeReason(of: connection)
        guard case .protocolError(let text) = reason else {
            Issue.record("expected a protocol error, got \(String(describing: reason))")
            return
        }
        #expect(text.contains("PROTOCOL_ERROR"), "\(text)")
    }

    @Test("a listener that never completes the handshake hits the connect timeout", .timeLimit(.minutes(5)))
    func connectTimeout() async throws {
        let listener = try SilentListener()
        defer { listener.close() }
        var configuration = try clientConfiguration()
        configuration.connectTimeout = .milliseconds(300)
        let start = ContinuousClock.now
        let error = try await connectError(host: "127.0.0.1", port: listener.port, configuration: configuration)
        #expect(error == .timedOut)
        #expect(ContinuousClock.now - start >= .milliseconds(290))
    }

    @Test("an unknown host name fails resolution")
    func unresolvableHost() async throws {
        let error = try await connectError(host: "nonexistent.invalid", port: 443, configuration: try clientConfiguration())
        guard case .resolutionFailed(let host, _) = error else {
            Issue.record("expected a resolution failure, got \(String(describing: error))")
            return
        }
        #expect(host == "nonexistent.invalid")
    }

    @Test("nothing listening: connect fails at once")
    func refusedConnect() async throws {
        // Held bound while connecting: a port only found free could be taken by another test's server.
        let (descriptor, port) = try boundSocket()
        defer { close(descriptor) }
        let error = try await connectError(host: "127.0.0.1", port: port, configuration: try clientConfiguration())
        guard case .connectFailed(let detail) = error else {
            Issue.record("expected a connect failure, got \(String(describing: error))")
            return
        }
        #expect(detail.contains("refused"))
    }

    /// Runs `openssl s_server` with the test certificate for `body`, which gets its port.
    private func withOpenSSLServer<T>(_ extra: [String], _ body: (Int) async throws -> T) async throws -> T {
        let certificates = try TestCertificates.get()
        let server = try await OpenSSLServer.start(certificateChain: certificates.serverCertificate,
                                                   privateKey: certificates.serverKey, extra)
        defer { server.stop() }
        return try await body(server.port)
    }
}
