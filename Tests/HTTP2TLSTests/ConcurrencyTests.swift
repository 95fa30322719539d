import HTTP2TLS
import Locking
import Synchronization
import Testing

@Suite("HTTP/2 client and server: many streams")
struct ConcurrencyTests {
    @Test("thousands of concurrent requests on one connection are all answered with their own bodies")
    func manyRequestsOnOneConnection() async throws {
        let server = try makeServer(echoHandler)
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
        let count = 5000
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<count {
                group.addTask {
                    let response = try await connection.send(request(index))
                    let ok = response.status == 200 && response.body == Array("body-\(index)".utf8)
                        && response.headers.value(of: "apns-id") == "id-\(index)"
                        && response.headers.value(of: "apns-unique-id") == "unique-\(response.streamID)"
                    return ok ? 0 : 1
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        #expect(server.statistics.requestsReceived == count)
        #expect(server.statistics.connectionsAccepted == 1)
        #expect(connection.outstandingRequests == 0)
    }

    @Test("requests spread over several connections are all answered")
    func manyRequestsOnSeveralConnections() async throws {
        let server = try makeServer(echoHandler)
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        var connections: [HTTP2ClientConnection] = []
        for _ in 0..<4 {
            connections.append(try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration()))
        }
        let pool = connections
        let count = 6000
        let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<count {
                group.addTask {
                    let response = try await pool[index % pool.count].send(request(index))
                    return response.status == 200 && response.body == Array("body-\(index)".utf8)
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(answered == count)
        #expect(server.statistics.connectionsAccepted == 4)
    }

    @Test("never more streams open than the server's SETTINGS_MAX_CONCURRENT_STREAMS")
    func respectsServerStreamLimit() async throws {
        let limit = 7
        // Answers only once `limit` requests are open at the same time: a client that
        // under-uses the limit stalls, one that exceeds it gets streams refused.
        let held = Locked<[ServerResponder]>([])
        let handler = ClosureHandler { _, responder in
            let batch = held.withLock { held -> [ServerResponder] in
                held.append(responder)
                guard held.count == limit else { return [] }
                defer { held.removeAll() }
                return held
            }
            for waiting in batch { waiting.respond(status: 200) }
        }
        let server = try makeServer(handler, maxConcurrentStreams: limit)
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
        let count = limit * 60
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<count { group.addTask { try await connection.send(request(index)).status } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == count)
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(server.statistics.peakConcurrentStreams == limit)
        #expect(connection.status.peerMaxConcurrentStreams == limit)
    }

    @Test("a raised stream limit is picked up by the connection", .timeLimit(.minutes(5)))
    func limitRaisedLater() async throws {
        let connectionID = Locked<Int?>(nil)
        let server = try makeServer(ClosureHandler(onOpen: { info in connectionID.withLock { $0 = info.id } },
                                                   onRequest: { _, responder in responder.respond(status: 200) }),
                                    maxConcurrentStreams: 1)
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
        var events = connection.events.makeAsyncIterator()
        #expect(await events.next() == .ready(maxConcurrentStreams: 1))
        _ = try await connection.send(request(0))
        server.setMaxConcurrentStreams(1000, connectionID: try #require(connectionID.withLock { $0 }))
        #expect(await events.next() == .maxConcurrentStreamsChanged(1000))
        #expect(connection.status.peerMaxConcurrentStreams == 1000)
        #expect(connection.status.streamLimit == 1000)
    }

    @Test("the status's stream limit: 1 until the first answer where asked, then the peer's under the local cap")
    func publishedStreamLimit() async throws {
        let server = try makeServer(ClosureHandler { _, responder in responder.respond(status: 200) }, maxConcurrentStreams: 50)
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        for singleStream in [true, false] {
            var configuration = try clientConfiguration()
            configuration.singleStreamUntilFirstResponse = singleStream
            configuration.maxConcurrentStreams = 20
            let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
            var events = connection.events.makeAsyncIterator()
            #expect(await events.next() == .ready(maxConcurrentStreams: 50))
            #expect(connection.status.streamLimit == (singleStream ? 1 : 20), "before the first answer, single stream \(singleStream)")
            _ = try await connection.send(request(0))
            #expect(connection.status.streamLimit == 20, "after the first answer, single stream \(singleStream)")
            connection.close()
        }
    }

    @Test("with singleStreamUntilFirstResponse nothing else is sent before the first answer")
    func singleStreamUntilFirstAnswer() async throws {
        let violations = try await arrivalsBeforeFirstAnswer(singleStream: true)
        #expect(violations == 0)
    }

    @Test("without it the client fans out at once (control for the test above)")
    func fanOutWithoutSingleStreamMode() async throws {
        let early = try await arrivalsBeforeFirstAnswer(singleStream: false)
        #expect(early > 0)
    }

    /// Holds the first request until a second one arrives (or 1 s passes) and counts the
    /// requests that arrive before the first is answered.
    private func arrivalsBeforeFirstAnswer(singleStream: Bool) async throws -> Int {
        struct State { var arrivals = 0; var first: ServerResponder?; var firstAnswered = false; var early = 0 }
        let state = Locked(State())
        let answerFirst: @Sendable () -> Void = {
            let first = state.withLock { state -> ServerResponder? in
                guard !state.firstAnswered else { return nil }
                state.firstAnswered = true
                return state.first
            }
            first?.respond(status: 200)
        }
        let handler = ClosureHandler { _, responder in
            let isFirst = state.withLock { state -> Bool in
                state.arrivals += 1
                if state.arrivals == 1 { state.first = responder }
                else if !state.firstAnswered { state.early += 1 }
                return state.arrivals == 1
            }
            if isFirst {
                Task {
                    try? await Task.sleep(for: .seconds(1))
                    answerFirst()
                }
            } else {
                answerFirst()
                responder.respond(status: 200)
            }
        }
        let server = try makeServer(handler)
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        var configuration = try clientConfiguration()
        configuration.singleStreamUntilFirstResponse = singleStream
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<50 { group.addTask { _ = try await connection.send(request(index)) } }
            try await group.waitForAll()
        }
        if singleStream { #expect(server.statistics.peakConcurrentStreams > 1) }
        return state.withLock { $0.early }
    }

    @Test("header fields flagged neverIndex reach the server with the never-indexed flag")
    func neverIndexedHeaders() async throws {
        let seen = Locked<[HeaderField]>([])
        let server = try makeServer(ClosureHandler { request, responder in
            seen.withLock { $0 = request.headers }
            responder.respond(status: 200)
        })
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
        _ = try await connection.send(HTTP2Request(path: "/", headers: [
            HeaderField("authorization", "bearer secret", neverIndex: true), HeaderField("Apns-Topic", "com.example"),
        ]))
        let headers = seen.withLock { $0 }
        #expect(headers.contains(HeaderField("authorization", "bearer secret", neverIndex: true)))
        #expect(headers.contains(HeaderField("apns-topic", "com.example", neverIndex: false)))
    }

    @Test("large bodies in both directions pass flow control intact")
    func largeBodies() async throws {
        let server = try makeServer(echoHandler)
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        var configuration = try clientConfiguration()
        // The echoed bodies are far above the default bound (64 KiB, for APNs's small answers).
        configuration.maxResponseBodySize = 1 << 20
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
        let intact = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<24 {
                group.addTask {
                    let body = (0..<(700_000 + index * 1000)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
                    let response = try await connection.send(HTTP2Request(path: "/big/\(index)", body: body))
                    return response.status == 200 && response.body == body
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(intact == 24)
    }
}
