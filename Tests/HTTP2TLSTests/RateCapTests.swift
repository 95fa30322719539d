import HTTP2TLS
import Locking
import Testing

/// The connection's side of `SubmitWindow`: it must tell the window when requests were
/// written and when their answers arrived. `SubmitWindowTests` hold the window's arithmetic;
/// these hold the wiring, over real TLS and HTTP/2, with the server's kernel receive times.
@Suite("A capped connection counts requests as the server receives them")
struct RateCapTests {
    static let limit = 5

    static func cappedConnection(to server: HTTP2Server, client: HTTP2Client) async throws -> HTTP2ClientConnection {
        var configuration = try clientConfiguration()
        configuration.maxRequestsPerSecond = limit
        // Held answers wait for a request a second later, which may start late: tests
        // share two pool threads.
        configuration.requestTimeout = .seconds(60)
        return try await client.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
    }

    static func sendAll(_ count: Int, on connection: HTTP2ClientConnection) async -> [Result<HTTP2Response, RequestFailure>] {
        await withTaskGroup(of: Result<HTTP2Response, RequestFailure>.self) { group in
            for index in 0..<count { group.addTask { await outcome(of: connection, request(index)) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    @Test("without answers, the next window opens a second after the writes, not never")
    func unansweredRequestsAreCountedFromTheirWrite() async throws {
        // The server answers nothing until it has a second window's first request: only the
        // write instants can let that request go.
        let state = Locked<(arrivals: [UInt64?], waiting: [ServerResponder])>(([], []))
        let server = try makeServer(ClosureHandler { request, responder in
            let answerNow = state.withLock { state -> [ServerResponder] in
                state.arrivals.append(request.arrivalNanoseconds)
                guard state.arrivals.count > Self.limit else {
                    state.waiting.append(responder)
                    return []
                }
                defer { state.waiting = [] }
                return state.waiting + [responder]
            }
            for responder in answerNow { responder.respond(status: 200) }
        })
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await Self.cappedConnection(to: server, client: client)

        let results = await Self.sendAll(Self.limit + 1, on: connection)

        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
        let arrivals = try state.value.arrivals.map { try #require($0) }.sorted()
        try #require(arrivals.count == Self.limit + 1)
        #expect(arrivals[Self.limit] - arrivals[0] >= 1_000_000_000, "more than the cap reached the server in one second")
    }

    @Test("answers let the next window open as soon as the server's second is up, not 25 ms after")
    func answeredRequestsAreCountedFromTheirAnswers() async throws {
        let arrivals = Locked<[UInt64?]>([])
        let server = try makeServer(ClosureHandler { request, responder in
            arrivals.withLock { $0.append(request.arrivalNanoseconds) }
            responder.respond(status: 200)
        })
        defer { server.shutdown() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await Self.cappedConnection(to: server, client: client)

        let results = await Self.sendAll(4 * Self.limit, on: connection)

        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
        // One connection keeps its order, so sorted arrivals are in submission order.
        let received = try arrivals.value.map { try #require($0) }.sorted()
        try #require(received.count == 4 * Self.limit)
        let spans = (0..<(received.count - Self.limit)).map { received[$0 + Self.limit] - received[$0] }
        #expect(spans.allSatisfy { $0 >= 1_000_000_000 }, "more than the cap reached the server in one second")
        // Counted only from the write, a request would wait 25 ms more than its window:
        // every span at least 1.025 s. An answer tells the window it was received sooner,
        // so some span is shorter; how much shorter depends on when this busy machine lets
        // the I/O thread submit (SubmitWindowTests checks the arithmetic exactly).
        #expect(spans.min().map { $0 < 1_025_000_000 } == true, "spans \(spans)")
    }
}
