import Foundation
import Glibc

/// `openssl s_server` on 127.0.0.1, on a port it binds itself (`-accept 127.0.0.1:0`) and
/// names in its output. A port found free beforehand and released could be bound by another
/// test's server before s_server starts; s_server would then fail, and the test would talk
/// to that other server without knowing it.
package final class OpenSSLServer: @unchecked Sendable {
    // @unchecked: `process` is only signalled and waited for, by the test that owns this.
    package let port: Int
    /// s_server passes what is written here to the client it is serving (and drops it
    /// while none is connected).
    package let input: FileHandle
    private let process: Process
    private let scratch: ScratchDirectory

    private init(port: Int, input: FileHandle, process: Process, scratch: ScratchDirectory) {
        self.port = port
        self.input = input
        self.process = process
        self.scratch = scratch
    }

    /// Starts s_server with the certificate chain and key plus `extra` arguments, and waits
    /// until it has bound its port.
    package static func start(certificateChain: String, privateKey: String, _ extra: [String]) async throws -> OpenSSLServer {
        guard let openssl = ChildProcess.tool("openssl") else { throw TestSetupError("openssl not found") }
        let scratch = try ScratchDirectory()
        let outputPath = scratch.file("s_server.log")
        guard FileManager.default.createFile(atPath: outputPath, contents: nil),
              let output = FileHandle(forWritingAtPath: outputPath) else { throw TestSetupError("cannot write \(outputPath)") }
        let stdin = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        // Not -quiet: its ACCEPT line names the port.
        process.arguments = ["s_server", "-accept", "127.0.0.1:0", "-cert", certificateChain, "-key", privateKey] + extra
        process.standardInput = stdin
        process.standardOutput = output
        process.standardError = output
        try process.run()
        try? output.close()
        var port: Int?
        _ = try await eventually(timeout: .seconds(60)) {
            port = acceptedPort(in: (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
            return port != nil || !process.isRunning
        }
        let server = OpenSSLServer(port: port ?? 0, input: stdin.fileHandleForWriting, process: process, scratch: scratch)
        guard port != nil else {
            let log = (try? scratch.read("s_server.log")) ?? ""
            server.stop()
            throw TestSetupError("openssl s_server did not start: \(log)")
        }
        return server
    }

    /// s_server ignores SIGTERM while it waits on stdin.
    package func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// The port in s_server's `ACCEPT 127.0.0.1:<port>` line.
    private static func acceptedPort(in output: String) -> Int? {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT 127.0.0.1:") }) else { return nil }
        return Int(line.dropFirst("ACCEPT 127.0.0.1:".count).trimmingCharacters(in: .whitespaces))
    }
}
