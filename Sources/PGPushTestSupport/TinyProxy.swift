import Foundation
import Glibc

/// Debian's tinyproxy (package tinyproxy-bin), started for one test: an HTTP proxy that
/// tunnels CONNECT, optionally asking for Basic credentials or limiting the ports it
/// tunnels to (others get 403).
package final class TinyProxy: Sendable {
    package let port: Int
    private let process: ChildProcess
    private let scratch: ScratchDirectory

    package static var isInstalled: Bool { ChildProcess.tool("tinyproxy") != nil }

    package var url: String { "http://127.0.0.1:\(port)" }

    /// `http://user:password@127.0.0.1:port`.
    package func url(user: String, password: String) -> String { "http://\(user):\(password)@127.0.0.1:\(port)" }

    private init(port: Int, process: ChildProcess, scratch: ScratchDirectory) {
        self.port = port
        self.process = process
        self.scratch = scratch
    }

    /// tinyproxy takes no port 0: a free one is picked and, should another process bind it
    /// first, another (it is tinyproxy's own listening socket that is waited for).
    package static func start(credentials: (user: String, password: String)? = nil,
                              connectPorts: [Int] = []) async throws -> TinyProxy {
        guard let executable = ChildProcess.tool("tinyproxy") else { throw TestSetupError("tinyproxy is not installed") }
        let scratch = try ScratchDirectory()
        var lastOutput = ""
        for _ in 0..<5 {
            let port = try freePort()
            var lines = ["Port \(port)", "Listen 127.0.0.1", "Timeout 60", "MaxClients 100", "LogLevel Info", "Allow 127.0.0.1"]
            if let credentials { lines.append("BasicAuth \(credentials.user) \(credentials.password)") }
            lines += connectPorts.map { "ConnectPort \($0)" }
            let configuration = try scratch.write(lines.joined(separator: "\n") + "\n", to: "tinyproxy.conf")
            let process = try ChildProcess(executable, ["-d", "-c", configuration])
            var listening = false
            _ = try await eventually(timeout: .seconds(60)) {
                listening = listeningPorts(ofProcess: process.pid).contains(port)
                return listening || process.hasExited
            }
            if listening { return TinyProxy(port: port, process: process, scratch: scratch) }
            lastOutput = process.output
        }
        throw TestSetupError("tinyproxy did not start: \(lastOutput)")
    }

    /// What tinyproxy logged.
    package var log: String { process.output }

    /// The CONNECT requests it was asked for, as `host:port`.
    package var connects: [String] {
        log.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "): CONNECT ") else { return nil }
            return line[range.upperBound...].split(separator: " ").first.map(String.init)
        }
    }
}
