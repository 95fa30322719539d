import Foundation
import Spawn
#if canImport(Glibc)
import Glibc
#endif

/// What a finished child process cost: CPU time and peak resident memory, from `wait4`.
public struct ProcessUsage: Sendable, Codable, Equatable {
    public var userSeconds: Double
    public var systemSeconds: Double
    public var peakResidentBytes: Int
    public var cpuSeconds: Double { userSeconds + systemSeconds }
}

/// A process the benchmark starts (the simulator, the worker) with its own
/// environment and its output in a file, so its CPU and memory are measured
/// apart from the benchmark's own.
public final class ChildProcess: Sendable {
    public let pid: pid_t
    public let outputPath: String

    private init(pid: pid_t, outputPath: String) {
        self.pid = pid
        self.outputPath = outputPath
    }

    /// Starts `executable` with stdin from /dev/null and stdout + stderr into `outputPath`.
    public static func spawn(_ executable: String, _ arguments: [String], environment: [String: String],
                             outputPath: String) throws(BenchError) -> ChildProcess {
        do {
            let pid = try Spawn.start(executable, arguments, environment: environment, output: outputPath, permissions: 0o644)
            return ChildProcess(pid: pid, outputPath: outputPath)
        } catch {
            throw BenchError(error.description)
        }
    }

    public func signal(_ number: Int32) {
        kill(pid, number)
    }

    /// Sends `number` (none when nil: it was sent already), then waits for the process to
    /// end; returns its exit status (as `waitpid` gives it) and its usage.
    ///
    /// The peak is the process's own VmHWM, sampled until it exits: `ru_maxrss` is no use
    /// here, because exec folds the spawning process's high-water mark into it (posix_spawn
    /// shares the parent's memory until exec), so every child would report at least the
    /// benchmark's own size.
    public func stop(signal number: Int32?) -> (status: Int32, usage: ProcessUsage) {
        var peak = residentHighWaterMark() ?? 0
        if let number { kill(pid, number) }
        while !hasExited {
            peak = max(peak, residentHighWaterMark() ?? 0)
            usleep(5_000)
        }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let seconds = { (time: timeval) in Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return (status, ProcessUsage(userSeconds: seconds(usage.ru_utime), systemSeconds: seconds(usage.ru_stime),
                                     peakResidentBytes: peak))
    }

    /// VmHWM from /proc: the most resident memory this process has had since it started.
    public func residentHighWaterMark() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        else { return nil }
        return kilobytes * 1024
    }

    /// Whether the process has already ended (a zombie not yet reaped counts).
    public var hasExited: Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return true }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    /// Polls the output file for a line starting with `prefix`, up to `timeout`.
    public func waitForLine(startingWith prefix: String, timeout: Duration) throws(BenchError) -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) { return String(line) }
            if hasExited { break }
            usleep(20_000)
        }
        throw BenchError("\(URL(fileURLWithPath: outputPath).lastPathComponent): no line \"\(prefix)…\" within \(timeout):\n"
                         + lastLines())
    }

    public func lastLines(_ count: Int = 10) -> String {
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(count).joined(separator: "\n")
    }

    /// The running executable, to start `pgpush mock-apns` and `pgpush run` from it.
    public static var currentExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
