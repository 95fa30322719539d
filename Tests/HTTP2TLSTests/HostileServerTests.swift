import Foundation
import Glibc
import HTTP2TLS
import Locking
import PGPushTestSupport
import Testing

/// The process's resident set, from /proc/self/statm.
private func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Samples the resident set on its own thread until `stop`: the peak an attack caused,
/// even if the memory is freed before the test looks.
private final class PeakResidentSet: Sendable {
    private let state: Locked<(peak: Int, stopped: Bool)>
    let start: Int

    init() {
        start = residentBytes()
        state = Locked((peak: start, stopped: false))
        Thread.detachNewThread { [self] in
            while true {
                let now = residentBytes()
                let stopped = state.withLock { state -> Bool in
                    state.peak = max(state.peak, now)
                    return state.stopped
                }
                if stopped { return }
                usleep(5_000)
            }
        }
    }

    /// How far the resident set rose above where it started.
    func stop() -> Int {
        let now = residentBytes()
        return state.withLock { state in
            state.stopped = true
            state.peak = max(state.peak, now)
            return state.peak - start
        }
    }
}

private let mebibyte = 1 << 20
/// Growth allowed while an attack runs. The resident set is the whole test process's, and
/// the other suites run beside this one (315 MiB of their growth fell inside one attack's
/// window in a CI run), so the bound sits far above that noise and the attacks are sized
/// so that an unbounded client would need several times the bound: a bounded client needs
/// a few MiB of windows and buffers.
private let allowedGrowth = 1024 * mebibyte

@Suite("HTTP/2 client: an answer's memory stays bounded whatever the server sends", .serialized)
struct HostileServerTests {
    @Test("an endless response body: the stream is reset at the body bound, memory stays bounded, the connection goes on",
          .timeLimit(.minutes(5)))
    func endlessBody() async throws {
        let server = try HostileHTTP2Server()
        defer { server.stop() }
        let sent = 4096 * mebibyte
        server.attack = .endlessBody(limit: sent)
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let configuration = try clientConfiguration()
        #expect(configuration.maxResponseBodySize == 64 * 1024)
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
        let peak = PeakResidentSet()
        let result = await outcome(of: connection, request(0))
        let grown = peak.stop()
        switch result {
        case .success(let response):
            Issue.record("answered with a body of \(response.body.count) bytes")
        case .failure(let failure):
            #expect(failure == RequestFailure(.mayHaveBeenProcessed, .responseTooLarge(.body(limit: 64 * 1024))))
        }
        #expect(grown < allowedGrowth, "resident set grew by \(grown / mebibyte) MiB")
        print("hostile[endless body]: resident set grew by \(grown / 1024) KiB; the server wrote \(server.bodyBytesSent) body bytes")
        // The stream was reset, not the connection: it answers the next request.
        server.attack = .answer
        let answer = try await connection.send(request(1))
        #expect(answer.status == 200 && answer.body == Array("ok".utf8))
        #expect(server.resetsReceived == 1)
        #expect(server.bodyBytesSent < sent)
        #expect(server.connectionsAccepted == 1)
    }

    @Test("a server that goes on sending DATA after the reset: the stream's window bounds it, nothing is kept",
          .timeLimit(.minutes(5)))
    func bodyAfterReset() async throws {
        let server = try HostileHTTP2Server()
        defer { server.stop() }
        server.attack = .endlessBody(limit: 256 * mebibyte, ignoringReset: true)
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: try clientConfiguration())
        let peak = PeakResidentSet()
        #expect(await failure(of: connection, request(0)) == RequestFailure(.mayHaveBeenProcessed, .responseTooLarge(.body(limit: 64 * 1024))))
        // nghttp2 drops DATA for the reset stream and never refills its window, so the
        // server can push at most the stream's initial window (16 MiB, our SETTINGS).
        let streamWindow = 1 << 24
        #expect(try await eventually(timeout: stateWaitLimit) { server.bodyBytesSent >= streamWindow })
        // The connection's window was refilled all along: it still answers.
        server.attack = .answer
        #expect(try await connection.send(request(1)).status == 200)
        #expect(server.bodyBytesSent == streamWindow)
        let grown = peak.stop()
        #expect(grown < allowedGrowth, "resident set grew by \(grown / mebibyte) MiB")
        print("hostile[body after reset]: resident set grew by \(grown / 1024) KiB; the server wrote \(server.bodyBytesSent) body bytes")
    }

    @Test("a body over a configured bound fails, one at the bound is answered", .timeLimit(.minutes(5)))
    func bodyBoundIsConfigurable() async throws {
        let server = try HostileHTTP2Server()
        defer { server.stop() }
        let client = try HTTP2Client()
        defer { client.shutdown() }
        var configuration = try clientConfiguration()
        configuration.maxResponseBodySize = 100_000
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
        server.attack = .endlessBody(limit: 100_000)
        #expect(try await connection.send(request(0)).body.count == 100_000)
        server.attack = .endlessBody(limit: 100_001)
        #expect(await failure(of: connection, request(1)) == RequestFailure(.mayHaveBeenProcessed, .responseTooLarge(.body(limit: 100_000))))
    }

    @Test("HPACK amplification: the connection ends at the header-list bound, memory stays bounded, a new connection works",
          .timeLimit(.minutes(5)))
    func amplifiedHeaders() async throws {
        let server = try HostileHTTP2Server()
        defer { server.stop() }
        // 512 KiB of HPACK that decodes to 2 GiB of header fields.
        server.attack = .amplifiedHeaders(fieldSize: 4000, blockSize: 512 * 1024)
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let configuration = try clientConfiguration()
        let bound = ResponseBound.headerList(limit: configuration.maxResponseHeaderListSize)
        #expect(configuration.maxResponseHeaderListSize == 16 * 1024)
        let connection = try await client.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
        let peak = PeakResidentSet()
        let result = await outcome(of: connection, request(0))
        let grown = peak.stop()
        switch result {
        case .success(let response):
            Issue.record("answered with \(response.headers.count) header fields")
        case .failure(let failure):
            #expect(failure == RequestFailure(.mayHaveBeenProcessed, .responseTooLarge(bound)))
        }
        #expect(grown < allowedGrowth, "resident set grew by \(grown / mebibyte) MiB")
        print("hostile[HPACK amplification]: resident set grew by \(grown / 1024) KiB")
        // The close is visible before the request fails.
        #expect(connection.status.phase == .closed(.responseTooLarge(bound)))
        if case .closed = connection.status.phase {
            #expect(await closeReason(of: connection) == .responseTooLarge(bound))
        } else {
            connection.close(graceful: false)
        }
        server.attack = .answer
        let fresh = try await client.connect(host: "127.0.0.1", port: server.port, configuration: configuration)
        #expect(try await fresh.send(request(1)).status == 200)
    }
}
