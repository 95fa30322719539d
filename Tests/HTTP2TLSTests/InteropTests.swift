import Foundation
import HTTP2TLS
import PGPushTestSupport
import Testing

/// Checks against the nghttp2 command-line tools (Debian nghttp2-client / nghttp2-server).
@Suite("Interoperability with h2load and nghttpd")
struct InteropTests {
    @Test("h2load gets 2xx for every request to our server", .enabled(if: ChildProcess.tool("h2load") != nil))
    func h2loadAgainstServer() async throws {
        let server = try makeServer(echoHandler)
        defer { server.shutdown() }
        let certificates = try TestCertificates.get()
        let bodyFile = certificates.directory + "/h2load-body.json"
        try #"{"aps":{"alert":"hello"}}"#.write(toFile: bodyFile, atomically: true, encoding: .utf8)
        let output = try await Self.runDetached("h2load", ["-n", "4000", "-c", "2", "-m", "50", "-d", bodyFile,
                                                           "https://127.0.0.1:\(server.port)/3/device/abc"])
        #expect(output.contains("4000 succeeded, 0 failed"))
        #expect(output.contains("4000 2xx"))
        #expect(server.statistics.requestsReceived == 4000)
        #expect(server.statistics.connectionsAccepted == 2)
    }

    @Test("our client talks to nghttpd (echo of POST bodies, 404 for a missing file)",
          .enabled(if: ChildProcess.tool("nghttpd") != nil), .timeLimit(.minutes(5)))
    func clientAgainstNghttpd() async throws {
        let certificates = try TestCertificates.get()
        let executable = try #require(ChildProcess.tool("nghttpd"))
        // Port 0: a port found free beforehand could be bound by another test's server first.
        // Started through ChildProcess (descriptors past stderr closed, output to a file), and
        // started again if it is not listening after 30 s: under ThreadSanitizer beside the
        // other suites one start (through Foundation's Process) still ran without listening
        // after 60 s, twice.
        var server: ChildProcess?
        var port: Int?
        for _ in 1...3 where port == nil {
            let started = try ChildProcess(executable, ["--echo-upload", "-a", "127.0.0.1", "-d", certificates.directory, "0",
                                                        certificates.serverKey, certificates.serverCertificate])
            _ = try? await eventually(timeout: .seconds(30)) {
                port = listeningPort(ofProcess: started.pid)
                return port != nil || started.hasExited
            }
            if port == nil {
                started.signal(SIGKILL)
                _ = await started.wait(timeout: .seconds(10))
            }
            server = started
        }
        defer { server?.signal(SIGKILL) }
        let bound = try #require(port, "nghttpd did not start listening in three starts: \(server?.lastLines() ?? "")")
        let client = try HTTP2Client()
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: bound, configuration: try clientConfiguration())
        let echoed = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<300 {
                group.addTask {
                    let response = try await connection.send(request(index))
                    return response.status == 200 && response.body == Array("body-\(index)".utf8)
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(echoed == 300)
        let missing = try await connection.send(HTTP2Request(method: "GET", path: "/does-not-exist"))
        #expect(missing.status == 404)
        #expect(connection.status.phase == .ready)
    }

    /// Runs a tool on its own thread so the cooperative pool is not blocked while it runs.
    private static func runDetached(_ name: String, _ arguments: [String]) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try Tool.run(name, arguments) })
            }
        }
    }
}
