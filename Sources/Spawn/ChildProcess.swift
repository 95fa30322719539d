import Foundation
import Glibc

/// A process started through `Spawn`, with its stdout and stderr in a file.
///
/// Made without an output path (a test's server or tool), the output goes to a temporary
/// file, and the process and the file end with this object: a test that fails half-way
/// leaves nothing running. Made with one (the benchmark's simulator and worker), both
/// outlive it, and the caller stops the process and reads the file.
package final class ChildProcess: @unchecked Sendable {
    // @unchecked: `exitStatus` is written only by `reap`, which callers use from one task.
    package let pid: pid_t
    package let outputPath: String
    private let endsWithObject: Bool
    private var exitStatus: Int32?

    /// A command-line tool from the system's folders (openssl, h2load, tcpdump), nil when it
    /// is not installed.
    package static func tool(_ name: String) -> String? {
        ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/bin", "/sbin"].map { "\($0)/\(name)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts `executable` with stdin from /dev/null and stdout and stderr into the output
    /// file, with this process's environment plus `environment` (only `environment` when
    /// `inheritEnvironment` is false).
    package init(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                inheritEnvironment: Bool = true, outputPath: String? = nil, outputMode: Spawn.OutputMode = .truncate,
                permissions: mode_t = 0o600, directory: String? = nil) throws(SpawnError) {
        endsWithObject = outputPath == nil
        self.outputPath = outputPath
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-child-\(UUID()).log").path
        let merged = inheritEnvironment ? ProcessInfo.processInfo.environment.merging(environment) { $1 } : environment
        pid = try Spawn.start(executable, arguments, environment: merged, output: self.outputPath, mode: outputMode,
                              permissions: permissions, directory: directory)
    }

    /// Runs a short tool (openssl, say) to completion; returns its exit code and its
    /// stdout and stderr together. The output goes to a file, not a pipe: a process
    /// spawned at the same moment may inherit a pipe's write end, and a read waiting
    /// for end of file would then wait as long as that process lives.
    package static func runToCompletion(_ executable: String, _ arguments: [String],
                                       in directory: String? = nil) throws(SpawnError) -> (status: Int32, output: String) {
        let child = try ChildProcess(executable, arguments, directory: directory)
        var status: Int32 = 0
        while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
        child.exitStatus = Spawn.exitCode(status)
        return (Spawn.exitCode(status), child.output)
    }

    deinit {
        guard endsWithObject else { return }
        if exitStatus == nil { kill(pid, SIGKILL); var status: Int32 = 0; waitpid(pid, &status, 0) }
        try? FileManager.default.removeItem(atPath: outputPath)
    }

    package var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    package func lastLines(_ count: Int = 10) -> String {
        output.split(separator: "\n").suffix(count).joined(separator: "\n")
    }

    package func signal(_ number: Int32) { kill(pid, number) }

    /// Waits for the process to exit; returns its exit code (128 + signal when killed), nil on timeout.
    package func wait(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while reap() == nil {
            guard ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return exitStatus
    }

    /// Whether the process has already ended (a zombie not yet reaped counts), without reaping it.
    package var hasExited: Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return true }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
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
