import Foundation
import PGPushTestSupport
import Testing

/// A `pgpush run` child process, killed with SIGKILL to play a crashed worker; waited for
/// with waitpid here, since the raw status tells a kill from an exit.
final class WorkerProcess {
    let pid: pid_t
    let logFile: String
    private var exitStatus: Int32?

    static let missingBinary: Comment = """
        skipped: pgpush not found beside the test bundle (.build/debug/pgpush) nor at PGPUSH_BINARY; \
        build it first (swift build --build-tests, or deploy/local/test.sh, which builds everything)
        """

    init(binary: String, environment: [String: String], logFile: String) throws {
        self.logFile = logFile
        // A log of its own outlives the ChildProcess (and so does the process): the suite
        // reads the log when an invariant fails, and waits for the process below.
        pid = try ChildProcess(binary, ["run"], environment: environment, outputPath: logFile, outputMode: .append,
                               permissions: 0o644).pid
    }

    /// A crash: no drain, no outcome flush, no deregistration.
    func kill9() { signal(SIGKILL) }

    func signal(_ number: Int32) {
        guard exitStatus == nil else { return }
        _ = kill(pid, number)
    }

    /// Waits for the process to end (SIGKILL after `timeout`); returns the raw wait status.
    @discardableResult
    func wait(timeout: Duration = .seconds(30)) async -> Int32 {
        if let exitStatus { return exitStatus }
        let deadline = ContinuousClock.now + timeout
        var status: Int32 = 0
        while true {
            let done = waitpid(pid, &status, WNOHANG)
            if done == pid || (done < 0 && errno != EINTR) { break }
            if ContinuousClock.now > deadline { _ = kill(pid, SIGKILL) }
            try? await Task.sleep(for: .milliseconds(20))
        }
        exitStatus = status
        return status
    }

    /// The last lines of the worker's log, for failure messages.
    func logTail(lines: Int = 15) -> String {
        let text = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }
}

/// Numbered `pgpush run` processes against one database and one simulator, each with its
/// own worker id and log file, and a 5 s lease so a killed worker's rows come back soon.
struct WorkerLauncher {
    private let binary: String
    private let environment: [String: String]
    private let directory: URL
    private let idPrefix: String
    private var started = 0

    /// `extra`: more variables for every worker (they win over the defaults here).
    init(binary: String, harness: SimulatorHarness, conninfo: String, connections: Int, ratePerConnection: Int,
         idPrefix: String, extra: [String: String] = [:]) {
        var environment = harness.workerEnvironment(connections: connections, ratePerConnection: ratePerConnection)
        environment["DATABASE_URL"] = conninfo
        // Behind a transaction pooler, as production runs it: LISTEN on a session of its own.
        if TestDatabase.throughPooler { environment["PGPUSH_LISTEN_DATABASE_URL"] = try? TestDatabase.session(conninfo) }
        environment["PGPUSH_LEASE_SECONDS"] = "5"
        environment["PGPUSH_DRAIN_SECONDS"] = "5"
        environment.merge(extra) { $1 }
        self.binary = binary
        self.environment = environment
        directory = harness.directory
        self.idPrefix = idPrefix
    }

    mutating func launch() throws -> WorkerProcess {
        started += 1
        var variables = environment
        variables["PGPUSH_WORKER_ID"] = "\(idPrefix)-\(started)"
        return try WorkerProcess(binary: binary, environment: variables,
                                 logFile: directory.appendingPathComponent("worker-\(started).log").path)
    }
}
