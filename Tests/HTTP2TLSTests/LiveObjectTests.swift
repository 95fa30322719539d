import HTTP2TLS
import PGPushTestSupport
import Testing

@Suite("No sockets, TLS or HTTP/2 sessions are leaked")
struct LiveObjectTests {
    /// A thousand cycles in a plain build; under ThreadSanitizer, where one cycle costs about
    /// thirty times as much, 150 still open and close every kind of object many times.
    @Test("a thousand connect/request/close cycles leave nothing open", .timeLimit(.minutes(10)))
    func connectDisconnectCycles() async throws {
        let closed = AsyncStream<Int>.makeStream()
        let server = try makeServer(ClosureHandler(onClose: { closed.continuation.yield($0) }) { request, responder in
            responder.respond(status: 200, body: request.body)
        })
        let client = try HTTP2Client()
        let cycles = Sanitizers.scaled(1000, underThreadSanitizer: 150)
        for index in 0..<cycles {
            let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
            #expect(try await connection.send(request(index)).status == 200)
            connection.close(graceful: index % 2 == 0)
            _ = await closeReason(of: connection)
        }
        #expect(client.liveObjects == LiveObjectCounts(sockets: 0, tlsSessions: 0, http2Sessions: 0, ioThreads: 1))

        var serverClosed = 0
        for await _ in closed.stream {
            serverClosed += 1
            if serverClosed == cycles { break }
        }
        #expect(server.liveObjects == LiveObjectCounts(sockets: 1, tlsSessions: 0, http2Sessions: 0, ioThreads: 1))
        #expect(server.statistics.openConnections == 0)

        client.shutdown()
        server.shutdown()
        #expect(client.liveObjects == .zero)
        #expect(server.liveObjects == .zero)
    }

    @Test("failed handshakes and a shutdown with requests in flight leave nothing open", .timeLimit(.minutes(5)))
    func failuresAndShutdown() async throws {
        let certificates = try TestCertificates.get()
        let untrusted = try makeServer(echoHandler, certificate: certificates.otherCAServerCertificate, key: certificates.otherCAServerKey)
        let arrived = AsyncStream<Void>.makeStream()
        let silent = try makeServer(ClosureHandler { _, _ in arrived.continuation.yield() })
        let client = try HTTP2Client()
        for _ in 0..<Sanitizers.scaled(50, underThreadSanitizer: 15) {
            await #expect(throws: ConnectError.self) {
                _ = try await client.connect(host: "127.0.0.1", port: untrusted.port, configuration: try clientConfiguration())
            }
        }
        #expect(client.liveObjects == LiveObjectCounts(sockets: 0, tlsSessions: 0, http2Sessions: 0, ioThreads: 1))

        let connection = try await client.connect(host: "127.0.0.1", port: silent.port, configuration: try clientConfiguration())
        async let pending = failure(of: connection, request(1))
        var arrivals = arrived.stream.makeAsyncIterator()
        await arrivals.next()
        client.shutdown()
        #expect(await pending == RequestFailure(.mayHaveBeenProcessed, .connectionClosed(.closedLocally)))
        #expect(client.liveObjects == .zero)
        #expect(await failure(of: connection, request(2)) == RequestFailure(.notProcessed, .connectionClosed(.closedLocally)))
        await #expect(throws: ConnectError.clientShutDown) {
            _ = try await client.connect(host: "127.0.0.1", port: silent.port, configuration: try clientConfiguration())
        }
        untrusted.shutdown()
        silent.shutdown()
        #expect(untrusted.liveObjects == .zero)
        #expect(silent.liveObjects == .zero)
    }
}
