import Foundation
import Spawn

/// A process started by a test (the `pgpush` binary, a server), with its
/// output in a file: started through `Spawn`, waited for with waitpid.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `exitStatus` is written once by `wait`, which callers use from one task.
    public let pid: pid_t
    public let outputPath: String
    private var exitStatus: Int32?

    /// The `pgpush` binary built beside the test bundle, if it exists.
    public static var pgpushBinary: String? {
        let candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
                          URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().deletingLastPathComponent()]
            .map { $0.appendingPathComponent("pgpush").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-child-\(UUID()).log").path
        pid = try Self.spawn(executable, arguments, environment: environment, outputPath: outputPath)
    }

    /// Runs a short tool (openssl, say) to completion; returns its exit code and its
    /// stdout and stderr together. The output goes to a file, not a pipe: a test that
    /// spawns a process at the same moment may inherit a pipe's write end, and a read
    /// waiting for end of file would then wait as long as that process lives.
    public static func runToCompletion(_ executable: String, _ arguments: [String],
                                       in directory: String? = nil) throws -> (status: Int32, output: String) {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-tool-\(UUID()).log").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let pid = try spawn(executable, arguments, environment: [:], outputPath: outputPath, directory: directory)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return (Spawn.exitCode(status), (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
    }

    /// Starts `executable` with stdin from /dev/null and stdout and stderr into `outputPath`,
    /// with this process's environment plus `environment`.
    private static func spawn(_ executable: String, _ arguments: [String], environment: [String: String],
                              outputPath: String, directory: String? = nil) throws -> pid_t {
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        return try Spawn.start(executable, arguments, environment: merged, output: outputPath, directory: directory)
    }

    deinit {
        if exitStatus == nil { kill(pid, SIGKILL); var status: Int32 = 0; waitpid(pid, &status, 0) }
        try? FileManager.default.removeItem(atPath: outputPath)
    }

    public var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    public func signal(_ number: Int32) { kill(pid, number) }

    /// Waits for the process to exit; returns its exit code (128 + signal when killed), nil on timeout.
    public func wait(timeout: Duration) async -> Int32? {
        _ = try? await eventually(timeout: timeout) { reap() != nil }
        return exitStatus
    }

    /// Waits until the output contains `text` (a "listening" line, say).
    public func waitForOutput(containing text: String, timeout: Duration) async -> Bool {
        (try? await eventually(timeout: timeout) { output.contains(text) }) ?? false
    }

    /// The exit code once the process has ended (collected once, then remembered).
    private func reap() -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        exitStatus = Spawn.exitCode(status)
        return exitStatus
    }
}
