import Foundation
import PGPushTestSupport
@testable import LocalHTTP
import Synchronization
import Testing

/// The server of the health endpoint and the status page against clients that lie about being clients: ones that trickle a
/// request a byte at a time, send nothing, send too much, never read, or come in a crowd.
/// Real sockets on 127.0.0.1; a probe is a plain GET /healthz that must be answered while
/// the others are still connected.
@Suite struct HTTPServerAbuseTests {
    static func route(_ request: HTTPRequest) -> HTTPResponse {
        switch request.path {
        case "/healthz": HTTPResponse(status: 200, body: "ok\n")
        case "/big": HTTPResponse(status: 200, body: String(repeating: "pgpush_big_series 1\n", count: 200_000))
        default: HTTPResponse(status: 404, body: "no\n")
        }
    }

    /// Four clients sending one byte a second (a head that never ends) and one sending
    /// nothing do not keep a prompt probe from being answered.
    @Test func slowClientsDoNotHoldTheEndpoint() async throws {
        let server = try HTTPServer(address: "127.0.0.1:0", limits: .init(requestDeadline: .seconds(120)), route: Self.route)
        defer { server.stop() }
        let silent = try RawClient(port: server.port)
        let trickling = try (0..<4).map { _ in try RawClient(port: server.port) }
        let loris = SlowLoris(trickling)
        defer { loris.stop() }
        // Every trickling client has sent part of its head: they are mid-request now.
        #expect(try await eventually(timeout: .seconds(60)) { loris.bytesSent >= 3 * trickling.count })
        for _ in 0..<3 {
            let probe = try RawClient(port: server.port)
            probe.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = probe.readAll(timeout: .seconds(10))
            #expect(answer.hasPrefix("HTTP/1.1 200 "), "the probe got \(answer.debugDescription)")
            #expect(answer.hasSuffix("\r\n\r\nok\n"))
        }
        // The slow ones were still there, unanswered and open, the whole time.
        for client in trickling + [silent] { #expect(client.state == .open) }
        #expect(loris.failures == 0)
    }

    /// A client too slow to finish its head within the deadline is answered 408 and closed.
    @Test func aRequestHeadHasADeadline() async throws {
        let server = try HTTPServer(address: "127.0.0.1:0", limits: .init(requestDeadline: .seconds(1)), route: Self.route)
        defer { server.stop() }
        let silent = try RawClient(port: server.port)
        let trickling = try RawClient(port: server.port)
        let loris = SlowLoris([trickling])
        defer { loris.stop() }
        #expect(try await eventually(timeout: .seconds(30)) { silent.state != .open && trickling.state != .open })
        #expect(silent.readAll(timeout: .seconds(10)).hasPrefix("HTTP/1.1 408 "))
        #expect(trickling.readAll(timeout: .seconds(10)).hasPrefix("HTTP/1.1 408 "))
    }

    /// A head larger than the cap is refused with 431 and the connection closed, not
    /// answered from its first 8 KiB.
    @Test func anOversizedRequestIsRefused() async throws {
        let server = try HTTPServer(address: "127.0.0.1:0", route: Self.route)
        defer { server.stop() }
        let client = try RawClient(port: server.port)
        client.send("GET /healthz HTTP/1.1\r\nX-Filler: " + String(repeating: "a", count: 16 * 1024) + "\r\n\r\n")
        let answer = client.readAll(timeout: .seconds(30))
        #expect(answer.hasPrefix("HTTP/1.1 431 "), "got \(answer.prefix(80).debugDescription)")
        #expect(client.state == .closed)
    }

    /// A crowd of idle connections past the cap: the oldest unanswered ones are dropped, so
    /// a probe still gets in and is answered.
    @Test func aCrowdOfIdleClientsCannotFillTheEndpoint() async throws {
        let cap = 8
        let server = try HTTPServer(address: "127.0.0.1:0", limits: .init(requestDeadline: .seconds(120), maximumConnections: cap),
                                       route: Self.route)
        defer { server.stop() }
        let crowd = try (0..<(cap * 3)).map { _ in try RawClient(port: server.port) }
        let probe = try RawClient(port: server.port)
        probe.send("GET /healthz HTTP/1.1\r\n\r\n")
        let answer = probe.readAll(timeout: .seconds(10))
        #expect(answer.hasPrefix("HTTP/1.1 200 "), "the probe got \(answer.debugDescription)")
        // The server holds at most `cap` of them; the rest it closed.
        #expect(try await eventually(timeout: .seconds(30)) { crowd.filter { $0.state == .open }.count <= cap })
        #expect(server.connectionsHeld <= cap)
    }

    /// A client that asks for a big body and never reads does not hold the loop: a probe is
    /// answered meanwhile, and a client that reads gets the big body whole.
    @Test func aClientThatNeverReadsDoesNotHoldTheEndpoint() async throws {
        let server = try HTTPServer(address: "127.0.0.1:0", route: Self.route)
        defer { server.stop() }
        let expected = Self.route(HTTPRequest(method: "GET", path: "/big")).body.count
        let stuck = try RawClient(port: server.port, receiveBuffer: 4096)
        stuck.send("GET /big HTTP/1.1\r\n\r\n")
        // Long enough for the server to fill the socket buffers and find it cannot write more.
        try await Task.sleep(for: .milliseconds(500))
        let probe = try RawClient(port: server.port)
        probe.send("GET /healthz HTTP/1.1\r\n\r\n")
        let answer = probe.readAll(timeout: .seconds(10))
        #expect(answer.hasPrefix("HTTP/1.1 200 "), "the probe got \(answer.debugDescription)")
        let reader = try RawClient(port: server.port)
        reader.send("GET /big HTTP/1.1\r\n\r\n")
        let big = reader.readAll(timeout: .seconds(60))
        #expect(big.hasPrefix("HTTP/1.1 200 ") && big.contains("Content-Length: \(expected)\r\n"))
        let body = big.range(of: "\r\n\r\n").map { big[$0.upperBound...] } ?? ""
        #expect(body.utf8.count == expected)
        withExtendedLifetime(stuck) {}
    }

    /// A response not written in time is dropped: a client that never reads holds its slot
    /// for the write deadline, not for ever.
    @Test func aResponseHasAWriteDeadline() async throws {
        let server = try HTTPServer(address: "127.0.0.1:0", limits: .init(writeDeadline: .seconds(1)), route: Self.route)
        defer { server.stop() }
        let stuck = try RawClient(port: server.port, receiveBuffer: 4096)
        stuck.send("GET /big HTTP/1.1\r\n\r\n")
        // Accepted (a count that only grows, so a busy test thread cannot miss it), then dropped:
        // the body cannot fit in the socket buffers, so only the deadline can end it.
        #expect(try await eventually(timeout: .seconds(30)) { server.connectionsAccepted == 1 })
        #expect(try await eventually(timeout: .seconds(30)) { server.connectionsHeld == 0 })
        withExtendedLifetime(stuck) {}
    }
}

/// What the status page needs beyond a probe: answers that take their time without
/// holding anyone else, and forms posted with a body.
@Suite struct HTTPServerRequestTests {
    /// A route still working on one request (a page waiting for the database) does not
    /// keep another client from its answer.
    @Test func aSlowAnswerHoldsOnlyItsOwnClient() async throws {
        let release = DispatchSemaphore(value: 0)
        let server = try HTTPServer(address: "127.0.0.1:0") { request in
            if request.path == "/slow" { release.wait() }
            return HTTPResponse(status: 200, body: request.path + "\n")
        }
        defer { server.stop() }
        let slow = try RawClient(port: server.port)
        slow.send("GET /slow HTTP/1.1\r\n\r\n")
        #expect(try await eventually(timeout: .seconds(30)) { server.connectionsAccepted == 1 })
        let probe = try RawClient(port: server.port)
        probe.send("GET /healthz HTTP/1.1\r\n\r\n")
        #expect(probe.readAll(timeout: .seconds(10)).hasSuffix("\r\n\r\n/healthz\n"))
        #expect(slow.state == .open)
        release.signal()
        #expect(slow.readAll(timeout: .seconds(10)).hasSuffix("\r\n\r\n/slow\n"))
    }

    /// A form's body arrives whole, even when it comes in pieces after the head, and its
    /// fields and the query are decoded.
    @Test func aPostedFormArrivesWhole() throws {
        // A deadline far past the pause: this is about a body in pieces, not about time.
        let server = try HTTPServer(address: "127.0.0.1:0", limits: .init(requestDeadline: .seconds(120), maximumBodySize: 1024)) { request in
            let fields = request.form.map { "\($0.name)=\($0.value)" }.joined(separator: ",")
            return HTTPResponse(status: 200, body: "\(request.method) \(request.path) \(request.queryValue("app") ?? "-") \(fields)")
        }
        defer { server.stop() }
        let client = try RawClient(port: server.port)
        let body = "id=1&id=22&token=a+b%21%3C"
        client.send("POST /requeue?app=shop%20x HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n" + body.prefix(5))
        // Long enough for the server to read the head and the body's start on their own.
        usleep(200_000)
        client.send(String(body.dropFirst(5)))
        let answer = client.readAll(timeout: .seconds(10))
        #expect(answer.hasSuffix("\r\n\r\nPOST /requeue shop x id=1,id=22,token=a b!<"), "got \(answer.debugDescription)")
    }

    /// A body longer than the cap is refused before it is read; a chunked one is refused.
    @Test func bodiesPastTheCapOrChunkedAreRefused() throws {
        let server = try HTTPServer(address: "127.0.0.1:0", limits: .init(maximumBodySize: 16)) { _ in
            HTTPResponse(status: 200, body: "answered\n")
        }
        defer { server.stop() }
        let big = try RawClient(port: server.port)
        big.send("POST /x HTTP/1.1\r\nContent-Length: 17\r\n\r\n")
        #expect(big.readAll(timeout: .seconds(10)).hasPrefix("HTTP/1.1 413 "))
        let chunked = try RawClient(port: server.port)
        chunked.send("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        #expect(chunked.readAll(timeout: .seconds(10)).hasPrefix("HTTP/1.1 411 "))
        let twoLengths = try RawClient(port: server.port)
        twoLengths.send("POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab")
        #expect(twoLengths.readAll(timeout: .seconds(10)).hasPrefix("HTTP/1.1 400 "))
    }

    /// A header value with a line break is never written (no response splitting).
    @Test func aFieldWithALineBreakIsNotSent() {
        let response = HTTPResponse(status: 303, headers: [HTTPHeaderField("Location", "/x\r\nSet-Cookie: a=b"), HTTPHeaderField("X-Ok", "1")],
                                    body: "")
        let text = String(decoding: response.encoded, as: UTF8.self)
        #expect(!text.contains("Set-Cookie") && !text.contains("Location") && text.contains("X-Ok: 1\r\n"))
    }

    @Test func formDecoding() {
        let fields = HTTPRequest.decodeForm("a=1&b=x+y%21&c&d=%zz&e=%E2%82%AC")
        #expect(fields.map(\.name) == ["a", "b", "c", "d", "e"])
        #expect(fields.map(\.value) == ["1", "x y!", "", "%zz", "€"])
    }
}

/// A blocking TCP client on 127.0.0.1, closed with the object.
final class RawClient: @unchecked Sendable {
    // @unchecked: the descriptor is fixed; the sends of a SlowLoris thread and the test's
    // reads of `state` are separate system calls on it.
    let descriptor: Int32

    enum State: Equatable { case open, answered, closed }

    init(port: Int, receiveBuffer: Int32? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestSetupError("socket() failed: errno \(errno)") }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(descriptor)
            throw TestSetupError("connect to 127.0.0.1:\(port) failed: errno \(code)")
        }
    }

    deinit { close(descriptor) }

    /// Sends all of `text` (or as much as the peer takes); false once the peer is gone.
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    /// Reads until the server closes or `timeout` passes.
    func readAll(timeout: Duration) -> String {
        let deadline = ContinuousClock.now + timeout
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while ContinuousClock.now < deadline {
            let left = deadline - ContinuousClock.now
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, Int32(max(1, min(1000, left.components.seconds * 1000 + 1))))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Open: the server neither answered nor closed; answered: bytes are waiting; closed: end
    /// of stream or reset. Looks without consuming.
    var state: State {
        var byte: UInt8 = 0
        let count = recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if count > 0 { return .answered }
        if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return .open }
        return .closed
    }
}

/// Sends one more byte of a request head that never ends to each client, every second,
/// from a thread of its own, until stopped.
final class SlowLoris: Sendable {
    private let running = Atomic<Bool>(true)
    private let sent = Atomic<Int>(0)
    private let failed = Atomic<Int>(0)

    init(_ clients: [RawClient]) {
        let head = Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ".utf8)
        let thread = Thread { [self] in
            var index = 0
            while running.load(ordering: .relaxed) {
                let byte = index < head.count ? head[index] : UInt8(ascii: "a")
                index += 1
                for client in clients {
                    if client.send(String(decoding: [byte], as: UTF8.self)) {
                        sent.add(1, ordering: .relaxed)
                    } else {
                        failed.add(1, ordering: .relaxed)
                    }
                }
                Thread.sleep(forTimeInterval: 1)
            }
        }
        thread.start()
    }

    var bytesSent: Int { sent.load(ordering: .relaxed) }
    var failures: Int { failed.load(ordering: .relaxed) }
    func stop() { running.store(false, ordering: .relaxed) }
}
