import Foundation
import Locking
import PGPushTestSupport
import Testing
@testable import HTTP2TLS

/// HTTP/1.1 messages (`HTTP1`, `HTTP1Parser`): what is written, and what is read from bytes
/// as they arrive, within bounds.
struct HTTP1MessageTests {
    static func parse(_ chunks: [String], kind: HTTP1Parser.Kind = .response, atEnd: Bool = false,
                      maxHead: Int = 1024, maxBody: Int = 1024) throws(HTTP1.Failure) -> [HTTP1Message] {
        var parser = HTTP1Parser(kind: kind, maxHeadBytes: maxHead, maxBodyBytes: maxBody)
        var messages: [HTTP1Message] = []
        for (index, chunk) in chunks.enumerated() {
            Array(chunk.utf8).withUnsafeBytes { parser.append($0) }
            while let message = try parser.next(atEnd: atEnd && index == chunks.count - 1) { messages.append(message) }
        }
        return messages
    }

    @Test func aRequestIsWrittenWithHostFieldsAndLength() throws {
        let request = HTTP2Request(path: "/push/abc?x=1", headers: [HeaderField("TTL", "60"), HeaderField("authorization", "vapid t=a, k=b")],
                                   body: [1, 2, 3])
        let bytes = try HTTP1.request(request, authority: "push.example:8443")
        let text = String(decoding: bytes.dropLast(3), as: UTF8.self)
        #expect(text == "POST /push/abc?x=1 HTTP/1.1\r\nhost: push.example:8443\r\nTTL: 60\r\nauthorization: vapid t=a, k=b\r\n"
                + "content-length: 3\r\n\r\n")
        #expect(Array(bytes.suffix(3)) == [1, 2, 3])
    }

    /// A CR or LF written into a field, the path or the method would start a field or a
    /// request of its own.
    @Test func whatWouldSplitTheMessageIsNotWritten() {
        for request in [HTTP2Request(path: "/a\r\nx: y", body: []), HTTP2Request(path: "/a b", body: []),
                        HTTP2Request(method: "PO ST", path: "/", body: []),
                        HTTP2Request(path: "/", headers: [HeaderField("ttl", "1\r\nx-injected: 1")], body: []),
                        HTTP2Request(path: "/", headers: [HeaderField("bad name", "1")], body: [])] {
            #expect(throws: HTTP1.Failure.self) { try HTTP1.request(request, authority: "h") }
        }
    }

    @Test func answersAreReadAsTheyArriveAndKeptApart() throws {
        let messages = try Self.parse(["HTTP/1.1 201 Created\r\nLocation: /m/1\r\nContent-Le", "ngth: 2\r\n\r\nok",
                                       "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 410 Gone\r\ncontent-length: 0\r\n\r\n",
                                       "HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nab", "cd\r\n2\r\nef\r\n0\r\nx-trailer: 1\r\n\r\n"])
        #expect(messages.map(\.status) == [201, 410, 400])
        #expect(messages[0].value(of: "location") == "/m/1" && messages[0].body == Array("ok".utf8))
        #expect(messages[2].body == Array("abcdef".utf8) && !messages[2].closes)
    }

    @Test func anAnswerWithoutLengthRunsToTheClose() throws {
        #expect(try Self.parse(["HTTP/1.1 500 Oops\r\n\r\npartial"]).isEmpty)
        let messages = try Self.parse(["HTTP/1.1 500 Oops\r\n\r\npartial", " and the rest"], atEnd: true)
        #expect(messages.count == 1 && messages[0].body == Array("partial and the rest".utf8) && messages[0].closes)
        #expect(try Self.parse(["HTTP/1.1 204 No Content\r\n\r\n"]).count == 1)
    }

    @Test func connectionCloseAndHTTP10AreNoticed() throws {
        #expect(try Self.parse(["HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"]).first?.closes == true)
        #expect(try Self.parse(["HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"]).first?.closes == true)
        #expect(try Self.parse(["HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"]).first?.closes == false)
    }

    /// A peer cannot make the reader hold more than the bounds: a head or a body too large
    /// fails as soon as it is known to be.
    @Test func boundsHoldForHeadAndBody() {
        #expect(throws: HTTP1.Failure.tooLarge(.headerList(limit: 64))) {
            try Self.parse(["HTTP/1.1 200 OK\r\nx: " + String(repeating: "a", count: 100)], maxHead: 64)
        }
        #expect(throws: HTTP1.Failure.tooLarge(.body(limit: 10))) {
            try Self.parse(["HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n"], maxBody: 10)
        }
        #expect(throws: HTTP1.Failure.tooLarge(.body(limit: 10))) {
            try Self.parse(["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n"], maxBody: 10)
        }
        #expect(throws: HTTP1.Failure.tooLarge(.body(limit: 10))) {
            try Self.parse(["HTTP/1.1 200 OK\r\n\r\n" + String(repeating: "a", count: 11)], maxBody: 10)
        }
    }

    @Test func malformedAnswersAreRefused() {
        for bytes in ["HTTP/2 200\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
                      "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n",
                      "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 2\r\n\r\n",
                      "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", "HTTP/1.1 200 OK\r\nx: \0\r\n\r\n",
                      // Found by fuzzing: a sign is no digit (a chunk of -1 bytes crashed the reader).
                      "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n-1\r\n", "HTTP/1.1 200 OK\r\ncontent-length: +5\r\n\r\n"] {
            #expect(throws: HTTP1.Failure.self, "\(bytes)") { try Self.parse([bytes]) }
        }
    }

    @Test func requestsAreReadWithTheirBodies() throws {
        let messages = try Self.parse(["POST /push/1 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhiGET / HTTP/1.1\r\nHost: h\r\n\r\n"],
                                      kind: .request)
        #expect(messages.map(\.method) == ["POST", "GET"] && messages.map(\.target) == ["/push/1", "/"])
        #expect(messages[0].body == Array("hi".utf8) && messages[1].body.isEmpty)
    }
}

/// The client over HTTP/1.1 against the test server speaking only HTTP/1.1: kept-alive
/// connections, answers in order, bounds and deadlines as over HTTP/2.
struct HTTP1ConnectionTests {
    static func server(_ handler: any HTTP2ServerHandler) throws -> HTTP2Server {
        let certificates = try TestCertificates.get()
        var configuration = HTTP2ServerConfiguration(certificateChain: .file(certificates.serverCertificate),
                                                     privateKey: .file(certificates.serverKey))
        configuration.protocols = .http1
        return try HTTP2Server(configuration: configuration, handler: handler)
    }

    static func client() throws -> HTTP2ClientConfiguration {
        let certificates = try TestCertificates.get()
        var configuration = HTTP2ClientConfiguration(tls: try ClientTLSContext(extraCAFile: certificates.caFile, offersHTTP1: true))
        configuration.requestTimeout = .seconds(600)
        return configuration
    }

    @Test func requestsShareOneKeptAliveConnectionOneAtATime() async throws {
        let opened = Locked(0)
        let server = try Self.server(ClosureHandler(onOpen: { _ in opened.withLock { $0 += 1 } }, onRequest: { request, responder in
            responder.respond(status: 201, headers: [HeaderField("location", "/m\(request.streamID)")], body: request.body)
        }))
        defer { server.shutdown() }
        let client = try HTTP2Client(threadName: "h1-test")
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try Self.client())
        #expect(connection.status.streamLimit == 1)
        let outcomes = await withTaskGroup(of: Result<HTTP2Response, RequestFailure>.self) { group in
            for index in 0..<20 { group.addTask { await outcome(of: connection, request(index)) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let responses = outcomes.compactMap { try? $0.get() }
        #expect(responses.count == 20)
        #expect(Set(responses.map { String(decoding: $0.body, as: UTF8.self) }) == Set((0..<20).map { "body-\($0)" }))
        #expect(Set(responses.map(\.streamID)).count == 20 && responses.allSatisfy { $0.headers.value(of: "location") == "/m\($0.streamID)" })
        #expect(opened.value == 1)
    }

    /// An answer past the body bound fails its request and ends the connection, as over HTTP/2.
    @Test func anAnswerPastTheBodyBoundEndsTheConnection() async throws {
        let server = try Self.server(ClosureHandler { _, responder in
            responder.respond(status: 200, body: [UInt8](repeating: 0x61, count: 2000))
        })
        defer { server.shutdown() }
        let client = try HTTP2Client(threadName: "h1-test")
        defer { client.shutdown() }
        var configuration = try Self.client()
        configuration.maxResponseBodySize = 1000
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
        let failure = await failure(of: connection, request(1))
        #expect(failure?.cause == .responseTooLarge(.body(limit: 1000)), "\(String(describing: failure))")
        #expect(await closeReason(of: connection) == .responseTooLarge(.body(limit: 1000)))
    }

    /// HTTP/1.1 cannot take one request back: one past its deadline ends the connection, and
    /// the requests queued behind it fail as not processed (to be sent elsewhere).
    @Test func aRequestPastItsDeadlineEndsTheConnection() async throws {
        let received = Locked(0)
        let server = try Self.server(ClosureHandler { _, _ in received.withLock { $0 += 1 } })
        defer { server.shutdown() }
        let client = try HTTP2Client(threadName: "h1-test")
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try Self.client())
        var first = request(1)
        // Long enough to be written first on a loaded machine, short enough to wait out.
        first.timeout = .seconds(8)
        async let expired = failure(of: connection, first)
        #expect(try await eventually { received.value == 1 })
        // Queued behind the one in flight: HTTP/1.1 sends one at a time.
        let behind = await failure(of: connection, request(2))
        let failed = await expired
        #expect(failed?.processing == .mayHaveBeenProcessed && failed?.cause == .deadlineExceeded, "\(String(describing: failed))")
        #expect(behind?.processing == .notProcessed, "\(String(describing: behind))")
        #expect(received.value == 1)
        #expect(await closeReason(of: connection) != nil)
    }
}
