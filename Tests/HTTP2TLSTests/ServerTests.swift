import Foundation
import HTTP2TLS
import Locking
import PGPushTestSupport
import Testing

@Suite("HTTP/2 server: configuration and client certificates")
struct ServerTests {
    @Test("certificate and key given as PEM text serve requests on an ephemeral port")
    func pemText() async throws {
        let certificates = try TestCertificates.get()
        var configuration = HTTP2ServerConfiguration(
            certificateChain: .text(try String(contentsOfFile: certificates.serverCertificate, encoding: .utf8)),
            privateKey: .text(try String(contentsOfFile: certificates.serverKey, encoding: .utf8)))
        configuration.port = 0
        let server = try HTTP2Server(configuration: configuration, handler: echoHandler)
        defer { server.shutdown() }
        #expect(server.port > 0)
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "localhost", port: server.port, configuration: try clientConfiguration())
        #expect(try await connection.send(request(7)).body == Array("body-7".utf8))
    }

    @Test("a request carries the kernel's receive time, not the time the server's thread got to it")
    func arrivalIsTheKernelsReceiveTime() async throws {
        @Sendable func wallClockNanoseconds() -> UInt64 {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
        }
        let seen = Locked<[String: (arrival: UInt64?, handled: UInt64)]>([:])
        let releasedAt = Locked<UInt64>(0)
        let (holding, holdingStarted) = AsyncStream<Void>.makeStream()
        let port = Locked<Int>(0)
        let server = try makeServer(ClosureHandler { request, responder in
            // Hold the I/O thread on the first request, as a busy server would be held, until
            // the second request's bytes wait unread in the server's socket.
            if request.path.hasSuffix("/0") {
                holdingStarted.yield()
                let giveUp = wallClockNanoseconds() + 240_000_000_000
                while unreadBytes(onLocalPort: port.value) == 0 && wallClockNanoseconds() < giveUp { usleep(1_000) }
                releasedAt.withLock { $0 = wallClockNanoseconds() }
            }
            seen.withLock { $0[request.path] = (request.arrivalNanoseconds, wallClockNanoseconds()) }
            responder.respond(status: 200)
        })
        defer { server.shutdown() }
        port.withLock { $0 = server.port }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        // Tests share two pool threads: this one may resume long after the hold begins
        // (over a minute under ThreadSanitizer), and the held server answers nothing
        // meanwhile, not even a PING.
        var configuration = try clientConfiguration()
        configuration.requestTimeout = .seconds(300)
        configuration.pingInterval = .seconds(600)
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
        // One answer first: until the server's SETTINGS arrive the client keeps to one
        // stream, and a server held before sending them would hold the second request too.
        _ = try await connection.send(request(2))
        async let first = connection.send(request(0))
        for await _ in holding { break }
        let sent = wallClockNanoseconds()
        async let second = connection.send(request(1))
        _ = try await (first, second)
        let held = try #require(seen.withLock { $0["/3/device/1"] })
        let arrival = try #require(held.arrival)
        let released = releasedAt.withLock { $0 }
        #expect(arrival >= sent)
        #expect(arrival < released, "the arrival time was taken when the thread got to the request")
        #expect(held.handled >= released)
    }

    @Test("unusable certificate material is reported as a typed error")
    func badMaterial() throws {
        let certificates = try TestCertificates.get()
        #expect {
            _ = try HTTP2Server(configuration: HTTP2ServerConfiguration(certificateChain: .text("not a certificate"),
                                                                        privateKey: .file(certificates.serverKey)),
                                handler: echoHandler)
        } throws: { error in
            guard case ServerError.tls(.cannotLoadCertificate) = error else { return false }
            return true
        }
        #expect {
            _ = try HTTP2Server(configuration: HTTP2ServerConfiguration(certificateChain: .file(certificates.serverCertificate),
                                                                        privateKey: .file(certificates.wrongHostKey)),
                                handler: echoHandler)
        } throws: { error in
            guard case ServerError.tls(.keyDoesNotMatchCertificate) = error else { return false }
            return true
        }
    }

    @Test("in request mode a client without certificate is served and has no subject")
    func requestModeWithoutCertificate() async throws {
        let subjects = Locked<[String?]>([])
        let handler = ClosureHandler(onOpen: { info in subjects.withLock { $0.append(info.peerCertificateSubject) } }) { request, responder in
            responder.respond(status: request.peerCertificateSubject == nil ? 200 : 500)
        }
        let server = try makeServer(handler, clientCertificates: .request)
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
        #expect(try await connection.send(request(1)).status == 200)
        #expect(subjects.value == [nil])
    }

    @Test("in require mode a client without certificate is turned away before any request", .timeLimit(.minutes(5)))
    func requireModeWithoutCertificate() async throws {
        let certificates = try TestCertificates.get()
        let server = try makeServer(echoHandler, clientCertificates: .require(trustedCAFile: certificates.caFile))
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        // With TLS 1.3 the server judges the client certificate after the client has finished
        // its handshake, so the refusal shows either at connect or at the first request.
        let configuration = try clientConfiguration()
        do throws(ConnectError) {
            let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
            let failure = await failure(of: connection, request(1))
            #expect(failure != nil)
        } catch {
            guard case .tlsHandshakeFailed = error else {
                Issue.record("unexpected \(error)")
                return
            }
        }
        #expect(server.statistics.requestsReceived == 0)
        #expect(server.statistics.handshakeFailures == 1)
    }

    @Test("a verified client certificate's subject is shown to the handler", .enabled(if: ChildProcess.tool("openssl") != nil),
          .timeLimit(.minutes(5)))
    func clientCertificateSubject() async throws {
        let certificates = try TestCertificates.get()
        let opened = AsyncStream<ServerConnectionInfo>.makeStream()
        let server = try makeServer(ClosureHandler(onOpen: { opened.continuation.yield($0) }) { _, _ in },
                                    clientCertificates: .require(trustedCAFile: certificates.caFile))
        defer { server.shutdown() }
        let process = try Tool.start("openssl", ["s_client", "-connect", "127.0.0.1:\(server.port)", "-alpn", "h2", "-quiet",
                                                 "-cert", certificates.serverCertificate, "-key", certificates.serverKey,
                                                 "-CAfile", certificates.caFile])
        defer { Tool.kill(process) }
        var iterator = opened.stream.makeAsyncIterator()
        let info = try #require(await iterator.next())
        #expect(info.peerCertificateSubject == "CN=server")
        #expect(info.peerCertificateDER?.isEmpty == false)
        #expect(info.peerAddress.hasPrefix("127.0.0.1:"))
    }

    @Test("clients without ALPN h2 or below TLS 1.2 are turned away", .enabled(if: ChildProcess.tool("openssl") != nil),
          .timeLimit(.minutes(5)),
          arguments: [["-alpn", "http/1.1"], [], ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0", "-alpn", "h2"]])
    func refusedClients(options: [String]) async throws {
        let server = try makeServer(echoHandler)
        defer { server.shutdown() }
        let certificates = try TestCertificates.get()
        // s_client (stdin held open) exits only once the server has ended the connection.
        let process = try Tool.start("openssl", ["s_client", "-connect", "127.0.0.1:\(server.port)", "-CAfile", certificates.caFile] + options)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                process.waitUntilExit()
                continuation.resume()
            }
        }
        #expect(server.statistics.handshakeFailures == 1)
        #expect(server.statistics.openConnections == 0)
    }
}
