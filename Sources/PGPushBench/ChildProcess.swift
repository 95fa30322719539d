import Foundation
import Spawn
#if canImport(Glibc)
import Glibc
#endif

/// What a finished child process cost: CPU time and peak resident memory, from `wait4`.
package struct ProcessUsage: Sendable, Codable, Equatable {
    package var userSeconds: Double
    package var systemSeconds: Double
    package var peakResidentBytes: Int
    package var cpuSeconds: Double { userSeconds + systemSeconds }
}

/// The benchmark's processes (the simulator, the worker) run with an environment of their
/// own and their output in a file the report can point to, so their CPU and memory are
/// measured apart from the benchmark's own.
extension ChildProcess {
    /// Starts `executable` with exactly `environment`, stdout + stderr into `outputPath`.
    package static func spawn(_ executable: String, _ arguments: [String], environment: [String: String],
                      outputPath: String) throws(BenchError) -> ChildProcess {
        do {
            return try ChildProcess(executable, arguments, environment: environment, inheritEnvironment: false,
                                    outputPath: outputPath, permissions: 0o644)
        } catch {
            throw BenchError(error.description)
        }
    }

    /// Sends `number` (none when nil: it was sent already), then waits for the process to
    /// end; returns its exit status (as `waitpid` gives it) and its usage.
    ///
    /// The peak is the process's own VmHWM, sampled until it exits: `ru_maxrss` is no use
    /// here, because exec folds the spawning process's high-water mark into it (posix_spawn
    /// shares the parent's memory until exec), so every child would report at least the
    /// benchmark's own size.
    package func stop(signal number: Int32?) -> (status: Int32, usage: ProcessUsage) {
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
    package func residentHighWaterMark() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        else { return nil }
        return kilobytes * 1024
    }

    /// Polls the output file for a line starting with `prefix`, up to `timeout`.
    package func waitForLine(startingWith prefix: String, timeout: Duration) throws(BenchError) -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = output.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) { return String(line) }
            if hasExited { break }
            usleep(20_000)
        }
        throw BenchError("\(URL(fileURLWithPath: outputPath).lastPathComponent): no line \"\(prefix)…\" within \(timeout):\n"
                         + lastLines())
    }
}

extension Benchmark {
    /// The running executable, to start `pgpush mock-apns` and `pgpush run` from it.
    package static var currentExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
