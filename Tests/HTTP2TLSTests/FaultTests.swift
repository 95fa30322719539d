import HTTP2TLS
import Locking
import PGPushTestSupport
import Testing

@Suite("HTTP/2 client: failures say whether the request may have been processed")
struct FaultTests {
    @Test("GOAWAY: streams above last_stream_id fail as not processed, the others complete", .timeLimit(.minutes(5)))
    func goAway() async throws {
        let total = 20
        let lastStreamID: Int32 = 19  // client streams are 1, 3, 5, ...: the first 10 requests
        let reference = ServerReference()
        let held = Locked<[ServerResponder]>([])
        let handler = ClosureHandler { _, responder in
            let batch = held.withLock { held -> [ServerResponder] in
                held.append(responder)
                return held.count == total ? held : []
            }
            guard !batch.isEmpty, let server = reference.value else { return }
            server.sendGoAway(connectionID: responder.connectionID, lastStreamID: lastStreamID,
                              debugData: Array(#"{"reason":"Shutdown"}"#.utf8))
            for waiting in batch where waiting.streamID <= lastStreamID { waiting.respond(status: 200) }
        }
        let server = try makeServer(handler)
        reference.set(server)
        defer { reference.set(nil); server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
        let results = await withTaskGroup(of: Result<HTTP2Response, RequestFailure>.self) { group in
            for index in 0..<total {
                group.addTask { await outcome(of: connection, request(index)) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let answered = results.compactMap { try? $0.get() }
        #expect(answered.count == 10)
        #expect(answered.allSatisfy { $0.status == 200 && $0.streamID <= lastStreamID })
        let failures = results.compactMap { result -> RequestFailure? in
            if case .failure(let failure) = result { return failure } else { return nil }
        }
        #expect(failures.count == 10)
        for failure in failures {
            #expect(failure.processing == .notProcessed)
            guard case .goAway(let goAway) = failure.cause else {
                Issue.record("unexpected cause \(failure)")
                continue
            }
            #expect(goAway.lastStreamID == lastStreamID)
            #expect(goAway.reason == "Shutdown")
        }
        let reason = await closeReason(of: connection)
        guard case .goAway(let goAway) = reason else {
            Issue.record("connection closed for \(String(describing: reason))")
            return
        }
        #expect(goAway.reason == "Shutdown")
        #expect(connection.status.goAway == goAway)
        // A closed connection turns new requests away without trying them, naming why it closed.
        #expect(await failure(of: connection, request(99)) == RequestFailure(.notProcessed, .connectionClosed(.goAway(goAway))))
    }

    @Test("RST_STREAM REFUSED_STREAM fails as not processed")
    func refusedStream() async throws {
        let server = try makeServer(ClosureHandler { request, responder in
            if request.path.hasSuffix("/1") { responder.respond(status: 200) } else { responder.refuse() }
        })
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
        do {
            _ = try await connection.send(request(0))
            Issue.record("a refused stream was answered")
        } catch {
            #expect(error == RequestFailure(.notProcessed, .refusedStream))
        }
        #expect(try await connection.send(request(1)).status == 200)
    }

    @Test("no answer before the deadline: may have been processed; the connection stays usable")
    func deadline() async throws {
        let server = try makeServer(ClosureHandler { request, responder in
            if request.path != "/slow" { responder.respond(status: 200) }
        })
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        var configuration = try clientConfiguration()
        configuration.requestTimeout = .milliseconds(300)
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
        let start = ContinuousClock.now
        do {
            _ = try await connection.send(HTTP2Request(path: "/slow"))
            Issue.record("an unanswered request succeeded")
        } catch {
            #expect(error == RequestFailure(.mayHaveBeenProcessed, .deadlineExceeded))
        }
        let elapsed = ContinuousClock.now - start
        // The upper bound only rules out a hang; a loaded CI machine can be slow to wake the loop.
        #expect(elapsed >= .milliseconds(290) && elapsed < .seconds(30))
        #expect(try await connection.send(request(1)).status == 200)
        #expect(connection.outstandingRequests == 0)
    }

    @Test("queued requests whose deadline passes before a stream frees up fail as not processed", .timeLimit(.minutes(5)))
    func deadlineWhileQueued() async throws {
        let held = Locked<ServerResponder?>(nil)
        let arrived = AsyncStream<Void>.makeStream()
        let server = try makeServer(ClosureHandler { _, responder in
            held.withLock { $0 = responder }
            arrived.continuation.yield()
        }, maxConcurrentStreams: 1)
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
        async let occupying = connection.send(request(0))
        var iterator = arrived.stream.makeAsyncIterator()
        await iterator.next()
        let failures = await withTaskGroup(of: RequestFailure?.self) { group in
            for index in 1...2 {
                group.addTask {
                    var queued = request(index)
                    queued.timeout = .milliseconds(300)
                    return await failure(of: connection, queued)
                }
            }
            return await group.reduce(into: [RequestFailure]()) { if let failure = $1 { $0.append(failure) } }
        }
        #expect(failures == [RequestFailure(.notProcessed, .deadlineExceeded), RequestFailure(.notProcessed, .deadlineExceeded)])
        try #require(held.value).respond(status: 200)
        #expect(try await occupying.status == 200)
        #expect(server.statistics.requestsReceived == 1)
    }

    @Test("server drops the connection: written requests may have been processed, queued ones were not", .timeLimit(.minutes(5)))
    func droppedConnection() async throws {
        let reference = ServerReference()
        let arrivals = Locked(0)
        let handler = ClosureHandler { _, responder in
            let count = arrivals.withLock { value -> Int in
                value += 1
                return value
            }
            if count == 2 { reference.value?.dropConnection(responder.connectionID) }
        }
        let server = try makeServer(handler, maxConcurrentStreams: 2)
        reference.set(server)
        defer { reference.set(nil); server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
        let failures = await withTaskGroup(of: RequestFailure?.self) { group in
            for index in 0..<5 {
                group.addTask { await failure(of: connection, request(index)) }
            }
            return await group.reduce(into: [RequestFailure]()) { if let failure = $1 { $0.append(failure) } }
        }
        #expect(failures.count == 5)
        #expect(failures.filter { $0.processing == .mayHaveBeenProcessed }.count == 2)
        #expect(failures.filter { $0.processing == .notProcessed }.count == 3)
        for failure in failures {
            guard case .connectionClosed = failure.cause else {
                Issue.record("unexpected cause \(failure)")
                continue
            }
        }
        #expect(await closeReason(of: connection) == .peerClosed)
    }

    @Test("graceful close: requests in flight finish, later ones are turned away unprocessed", .timeLimit(.minutes(5)))
    func gracefulClose() async throws {
        let held = Locked<ServerResponder?>(nil)
        let arrived = AsyncStream<Void>.makeStream()
        let server = try makeServer(ClosureHandler { _, responder in
            held.withLock { $0 = responder }
            arrived.continuation.yield()
        })
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
        async let inFlight = connection.send(request(0))
        var iterator = arrived.stream.makeAsyncIterator()
        await iterator.next()
        connection.close(graceful: true)
        do {
            _ = try await connection.send(request(1))
            Issue.record("a request was accepted after close")
        } catch {
            #expect(error.processing == .notProcessed)
        }
        try #require(held.value).respond(status: 200)
        #expect(try await inFlight.status == 200)
        #expect(await closeReason(of: connection) == .closedLocally)
    }

    @Test("cancelling the calling task withdraws a request; the connection stays usable", .timeLimit(.minutes(15)))
    func cancellation() async throws {
        let arrived = AsyncStream<Void>.makeStream()
        let server = try makeServer(ClosureHandler { request, responder in
            if request.path == "/hold" { arrived.continuation.yield() } else { responder.respond(status: 200) }
        })
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
        // A long deadline: on a loaded machine (ThreadSanitizer beside the whole suite) this test's
        // task may resume after the default 10 s, and the request must end by the cancellation.
        let task = Task { await failure(of: connection, HTTP2Request(path: "/hold", timeout: .seconds(600))) }
        var iterator = arrived.stream.makeAsyncIterator()
        await iterator.next()
        task.cancel()
        #expect(await task.value == RequestFailure(.mayHaveBeenProcessed, .cancelled))
        #expect(try await connection.send(request(1)).status == 200)
        #expect(connection.outstandingRequests == 0)

        let cancelledEarly = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await failure(of: connection, request(2))
        }
        #expect(await cancelledEarly.value == RequestFailure(.notProcessed, .cancelled))
    }

    @Test("GOAWAY to all connections after their last request: every connection closes with the reason", .timeLimit(.minutes(5)))
    func goAwayToAll() async throws {
        let server = try makeServer(echoHandler)
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        var connections: [HTTP2ClientConnection] = []
        for index in 0..<3 {
            let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
            #expect(try await connection.send(request(index)).status == 200)
            connections.append(connection)
        }
        server.sendGoAwayToAll(debugData: Array(#"{"reason":"IdleTimeout"}"#.utf8))
        for connection in connections {
            guard case .goAway(let goAway) = await closeReason(of: connection) else {
                Issue.record("connection \(connection.id) did not close on GOAWAY")
                continue
            }
            #expect(goAway.reason == "IdleTimeout")
            #expect(goAway.lastStreamID == 1)
        }
    }

    @Test("a server that answers PINGs but no request: the connection closes itself after three deadlines in a row",
          .timeLimit(.minutes(5)))
    func unresponsive() async throws {
        let held = Locked<[ServerResponder]>([])
        let server = try makeServer(ClosureHandler { _, responder in held.withLock { $0.append(responder) } })
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        var configuration = try clientConfiguration()
        configuration.requestTimeout = .milliseconds(300)
        // PINGs go out and are answered all along: liveness alone would keep the connection.
        configuration.pingInterval = .milliseconds(50)
        configuration.maxConcurrentStreams = 1
        #expect(configuration.unresponsiveAfterDeadlines == 3)
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
        for index in 0..<2 {
            #expect(await failure(of: connection, request(index)) == RequestFailure(.mayHaveBeenProcessed, .deadlineExceeded))
            #expect(connection.status.acceptsRequests)
        }
        // The third goes in flight; the fourth waits behind it for the one stream, with a
        // deadline of its own far off.
        async let third = failure(of: connection, request(2))
        #expect(try await eventually { held.value.count == 3 })
        var queued = request(3)
        queued.timeout = .seconds(20)
        let fourth = await failure(of: connection, queued)
        #expect(await third == RequestFailure(.mayHaveBeenProcessed, .deadlineExceeded))
        let reason = CloseReason.unresponsive(deadlinesInARow: 3)
        // Never sent: not processed, so the pool sends it elsewhere without spending an attempt.
        #expect(fourth == RequestFailure(.notProcessed, .connectionClosed(reason)))
        #expect(connection.status.phase == .closed(reason))
        #expect(held.value.count == 3)
    }
}
