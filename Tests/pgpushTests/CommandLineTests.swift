import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import PushCrypto
import Testing

/// The `pgpush` binary as users run it: exit codes, messages, signals.
@Suite(.enabled(if: ChildProcess.pgpushBinary != nil, "the pgpush binary is built by `swift build` before the tests"))
struct CommandLineTests {
    let binary = ChildProcess.pgpushBinary ?? "pgpush"

    func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> (code: Int32?, output: String) {
        let child = try ChildProcess(binary, arguments, environment: environment)
        let code = await child.wait(timeout: .seconds(180))
        return (code, child.output)
    }

    @Test func helpAndUsageErrors() async throws {
        let help = try await run(["--help"])
        #expect(help.code == 0)
        for command in ["migrate", "run", "doctor", "prune", "mock-apns"] { #expect(help.output.contains(command)) }
        #expect(try await run(["run", "--help"]).output.contains("PGPUSH_RATE_PER_CONNECTION"))
        let unknown = try await run(["frobnicate"])
        #expect(unknown.code == 2)
        let typo = try await run(["migrate", "--databse-url", "x"])
        #expect(typo.code == 2)
        #expect(typo.output.contains("unknown flag --databse-url"))
    }

    /// `-h` or `--help` anywhere means help and nothing else: no migration, no prune, no worker.
    @Test func helpAnywhereOnlyPrintsHelp() async throws {
        let conninfo = try TestDatabase.empty()
        let environment = ["DATABASE_URL": conninfo, "PGPUSH_SQL_DIR": TestDatabase.sqlDirectory]
        let invocations: [[String]] = [
            ["migrate", "-h"], ["migrate", "--sql-dir", TestDatabase.sqlDirectory, "--help"],
            ["prune", "--older-than-days", "30", "-h"], ["prune", "--help", "--older-than-days", "30"],
            ["run", "-h"], ["doctor", "-h"], ["status", "-h"], ["status", "--bogus", "-h"],
            ["enqueue", "--token", "00", "-h"], ["demo", "-h"], ["mock-apns", "--port", "0", "-h"], ["bench", "-h"],
            ["prune", "--older-than-days", "-h"],
        ]
        for arguments in invocations {
            let result = try await run(arguments, environment: environment)
            #expect(result.code == 0, "pgpush \(arguments): \(result.output)")
            #expect(result.output.contains("pgpush \(arguments[0]) —"), "pgpush \(arguments) printed no help: \(result.output)")
        }
        // Nothing above touched the database: migrate -h created no schema.
        let database = try PostgresConnection(conninfo: conninfo)
        #expect(try database.query("SELECT to_regnamespace('pgpush') IS NULL").bool(0, 0) == true)
    }

    /// Every bad flag says what is wrong with it, points to --help and exits 2.
    @Test func badFlagsAreNamedAndExit2() async throws {
        let environment = ["DATABASE_URL": "host=/nonexistent"]
        let cases: [(arguments: [String], message: String)] = [
            (["status", "--bogus"], "unknown flag --bogus"),
            (["migrate", "--bogus"], "unknown flag --bogus"),
            (["run", "--bogus"], "unknown flag --bogus"),
            (["prune", "--older-than-days", "1", "--bogus"], "unknown flag --bogus"),
            (["status", "--bogus", "x"], "unknown flag --bogus"),
            (["status", "--bogus=x"], "unknown flag --bogus"),
            (["migrate", "-x"], "unknown flag -x"),
            (["status", "--json=yes"], "--json takes no value"),
            (["prune", "--older-than-days"], "--older-than-days needs a value"),
            (["prune", "--older-than-days", "--batch-size", "5"], "--older-than-days needs a value"),
            (["migrate", "extra"], "unexpected argument extra"),
        ]
        for (arguments, message) in cases {
            let result = try await run(arguments, environment: environment)
            #expect(result.code == 2, "pgpush \(arguments) exited \(String(describing: result.code)): \(result.output)")
            #expect(result.output.contains(message), "pgpush \(arguments) said: \(result.output)")
            #expect(result.output.contains("pgpush \(arguments[0]) --help"), "pgpush \(arguments) said: \(result.output)")
        }
    }

    /// Output into a pipe nobody reads (`pgpush run 2>&1 | head -2` once head is gone) is
    /// lost, not fatal: the process ends with its own exit code, not SIGPIPE or a trap.
    @Test func writesToABrokenPipeDoNotKillTheProcess() async throws {
        let cases: [(arguments: [String], brokenDescriptor: Int32, expected: Int32)] = [
            (["status"], 2, 1), (["status"], 1, 1), (["--version"], 1, 0), (["--version"], 2, 0),
            (["migrate", "--bogus"], 2, 2),
        ]
        for (arguments, descriptor, expected) in cases {
            for closed in [false, true] {
                let code = try await Self.runWithBrokenPipe(binary, arguments, descriptor: descriptor, closed: closed,
                                                            environment: ["DATABASE_URL": "host=/nonexistent"])
                #expect(code == expected,
                        "pgpush \(arguments) with fd \(descriptor) \(closed ? "closed" : "broken") ended with \(String(describing: code))")
            }
        }
    }

    /// Runs `binary` with `descriptor` (1 or 2) the write end of a pipe whose read end is
    /// already closed (or, with `closed`, not open at all), the other one /dev/null, and
    /// SIGPIPE at its default action as a shell would leave it; returns the exit code
    /// (128 + signal when killed).
    static func runWithBrokenPipe(_ binary: String, _ arguments: [String], descriptor: Int32, closed: Bool = false,
                                  environment: [String: String]) async throws -> Int32? {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw SpawnFailure(errno: errno) }
        close(ends[0])
        // Another test spawning now must not inherit the write end.
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        defer { close(ends[1]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, descriptor == 1 ? 2 : 1, "/dev/null", O_WRONLY, 0)
        if closed {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        } else {
            posix_spawn_file_actions_adddup2(&actions, ends[1], descriptor)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let argv: [UnsafeMutablePointer<CChar>?] = ([binary] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, binary, &actions, &attributes, argv, envp)
        guard result == 0 else { throw SpawnFailure(errno: result) }
        var status: Int32 = 0
        let ended = try? await eventually(timeout: .seconds(180)) { waitpid(pid, &status, WNOHANG) == pid }
        guard ended == true else {
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
            return nil
        }
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    struct SpawnFailure: Error { let errno: Int32 }

    /// A connection string libpq cannot parse is a configuration error, found before any
    /// connection attempt: exit 2 naming DATABASE_URL, never a worker retrying for ever.
    @Test func unparseableConnectionStringExits2NamingDatabaseURL() async throws {
        let simulated = try Simulated(conninfo: "")
        defer { simulated.stop() }
        for conninfo in ["host=localhost port=notanumber", "postgresql//user:secret@localhost/app", "=junk"] {
            for arguments in [["run"], ["doctor"], ["status"], ["migrate"], ["prune", "--older-than-days", "1"]] {
                let child = try ChildProcess(binary, arguments, environment: simulated.environment.merging(["DATABASE_URL": conninfo]) { $1 })
                let code = await child.wait(timeout: .seconds(20))
                #expect(code == 2, "pgpush \(arguments) with DATABASE_URL=\(conninfo) ended \(String(describing: code)): \(child.output)")
                #expect(child.output.contains("DATABASE_URL"), "pgpush \(arguments) with DATABASE_URL=\(conninfo) said: \(child.output)")
            }
        }
        let flag = try await run(["status", "--database-url", "=junk"])
        #expect(flag.code == 2)
        #expect(flag.output.contains("--database-url"), "\(flag.output)")
    }

    @Test func runHelpNamesThePerAppRetrySettings() async throws {
        let help = try await run(["run", "--help"])
        #expect(help.code == 0)
        for name in [
            "--retry-server-errors", "PGPUSH_RETRY_SERVER_ERRORS", "--retry-delay-min-seconds", "PGPUSH_RETRY_DELAY_MIN_SECONDS",
            "--retry-delay-max-seconds", "PGPUSH_RETRY_DELAY_MAX_SECONDS", "--retry-429-base-seconds", "PGPUSH_RETRY_429_BASE_SECONDS",
            "--retry-429-max-delay-seconds", "PGPUSH_RETRY_429_MAX_DELAY_SECONDS", "--retry-429-max-attempts",
            "PGPUSH_RETRY_429_MAX_ATTEMPTS", "--skip-known-invalid-tokens", "PGPUSH_SKIP_KNOWN_INVALID_TOKENS",
        ] {
            #expect(help.output.contains(name), "run --help does not name \(name)")
        }
        for defaults in ["0–20 (default 3)", "(default 1, 5)", "(default 1, 60)", "1–100 (default 8)", "(default true)"] {
            #expect(help.output.contains(defaults), "run --help does not say \(defaults)")
        }
    }

    @Test func badRetrySettingNamesItAndExits2() async throws {
        let environment = [
            "DATABASE_URL": "host=/nonexistent", "PGPUSH_TOPIC": "com.example", "PGPUSH_TEAM_ID": "TEAM123456",
            "PGPUSH_KEY_ID": "KEY1234567", "PGPUSH_KEY_FILE": "/nonexistent/AuthKey.p8",
        ]
        let flag = try await run(["run", "--retry-429-max-attempts", "0"], environment: environment)
        #expect(flag.code == 2)
        #expect(flag.output.contains("PGPUSH_RETRY_429_MAX_ATTEMPTS"), "\(flag.output)")
        #expect(flag.output.contains("from 1 to 100"), "\(flag.output)")
        let variable = try await run(["run"], environment: environment.merging(["PGPUSH_RETRY_DELAY_MAX_SECONDS": "0"]) { $1 })
        #expect(variable.code == 2)
        #expect(variable.output.contains("PGPUSH_RETRY_DELAY_MAX_SECONDS"), "\(variable.output)")
        let skip = try await run(["run", "--skip-known-invalid-tokens", "maybe"], environment: environment)
        #expect(skip.code == 2)
        #expect(skip.output.contains("PGPUSH_SKIP_KNOWN_INVALID_TOKENS must be true or false"), "\(skip.output)")
    }

    @Test func migrateTwiceThenUpToDate() async throws {
        let conninfo = try TestDatabase.empty()
        let first = try await run(["migrate", "--sql-dir", TestDatabase.sqlDirectory], environment: ["DATABASE_URL": conninfo])
        #expect(first.code == 0)
        #expect(first.output.contains("applied"))
        let second = try await run(["migrate", "--sql-dir", TestDatabase.sqlDirectory], environment: ["DATABASE_URL": conninfo])
        #expect(second.code == 0)
        #expect(second.output.contains("up to date"))
    }

    @Test func badConfigurationNamesTheSettingAndExits2() async throws {
        let missing = try await run(["run"], environment: ["DATABASE_URL": "host=/nonexistent", "PGPUSH_TOPIC": "com.example"])
        #expect(missing.code == 2)
        #expect(missing.output.contains("PGPUSH_KEY_FILE"))
        let badKey = try await run(["run"], environment: [
            "DATABASE_URL": "host=/nonexistent", "PGPUSH_TOPIC": "com.example", "PGPUSH_TEAM_ID": "TEAM123456",
            "PGPUSH_KEY_ID": "KEY1234567", "PGPUSH_KEY_FILE": "/nonexistent/AuthKey.p8",
        ])
        #expect(badKey.code == 2)
        #expect(badKey.output.contains("/nonexistent/AuthKey.p8"))
    }

    /// The simulator harness, and the environment that points `pgpush run` at it and the database.
    struct Simulated {
        let harness: SimulatorHarness
        let environment: [String: String]
        var simulator: APNsSimulator { harness.simulator }
        var directory: URL { harness.directory }

        init(conninfo: String, faults: FaultPlan = FaultPlan()) throws {
            harness = try SimulatorHarness(faults: faults)
            environment = harness.workerEnvironment().merging(["DATABASE_URL": conninfo]) { $1 }
        }

        func stop() { harness.stop() }
    }

    static func count(_ database: PostgresConnection, _ status: String) throws -> Int {
        try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = $1", [status]).int(0, 0) ?? 0
    }

    @Test func sigtermDuringABacklogDrainsDeregistersAndExitsZero() async throws {
        let conninfo = try TestDatabase.migrated()
        let simulated = try Simulated(conninfo: conninfo)
        defer { simulated.stop() }
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 1000)
        // One connection at 5/s: over three minutes of backlog, stopped after a moment (a
        // loaded machine may take seconds to notice the first deliveries, and this task
        // may resume a minute late: tests share the pool's threads; at 20/s a stall of
        // 50 s once let the whole backlog finish before the signal).
        let worker = try ChildProcess(binary, ["run"], environment: simulated.environment.merging([
            "PGPUSH_WORKER_ID": "cli-worker", "PGPUSH_CONNECTIONS": "1", "PGPUSH_RATE_PER_CONNECTION": "5",
        ]) { $1 })
        #expect(try await eventually { try Self.count(database, "delivered") >= 5 })
        #expect(try database.query("SELECT count(*) FROM pgpush.workers WHERE id = 'cli-worker'").int(0, 0) == 1)
        worker.signal(SIGTERM)
        let code = await worker.wait(timeout: .seconds(30))
        #expect(code == 0, "output: \(worker.output)")
        #expect(worker.output.contains("worker_stopped"))
        let delivered = try Self.count(database, "delivered"), queued = try Self.count(database, "queued")
        #expect(try Self.count(database, "sending") == 0)
        #expect(delivered + queued == 1000)
        #expect(queued > 0)
        #expect(simulated.simulator.report().totalRequests == delivered)
        #expect(try database.query("SELECT count(*) FROM pgpush.workers").int(0, 0) == 0)
    }

    /// OpenSSL's exit-time cleanup once raced an I/O thread still using it (SIGSEGV after
    /// worker_stopped): a worker stopped by SIGTERM, with connections open and sends in
    /// flight, exits 0 every time.
    @Test func everySigtermStopExitsZero() async throws {
        let conninfo = try TestDatabase.migrated()
        let simulated = try Simulated(conninfo: conninfo)
        defer { simulated.stop() }
        let database = try PostgresConnection(conninfo: conninfo)
        for round in 1...20 {
            try TestDatabase.enqueueAlerts(database, count: 200)
            let worker = try ChildProcess(binary, ["run"], environment: simulated.environment.merging([
                "PGPUSH_WORKER_ID": "exit-\(round)", "PGPUSH_CONNECTIONS": "2", "PGPUSH_RATE_PER_CONNECTION": "200",
                "PGPUSH_DRAIN_SECONDS": "5",
            ]) { $1 })
            #expect(await worker.waitForOutput(containing: "worker_started", timeout: .seconds(60)), "round \(round): \(worker.output)")
            // Stop while requests are on the wire, as an operator's deploy would.
            #expect(try await eventually { simulated.simulator.report().totalRequests > 0 })
            worker.signal(SIGTERM)
            let code = await worker.wait(timeout: .seconds(60))
            #expect(code == 0, "round \(round) ended \(String(describing: code)): \(worker.output.suffix(2000))")
            #expect(worker.output.contains("worker_stopped"), "round \(round)")
            try database.query("DELETE FROM pgpush.notifications")
        }
    }

    @Test func threeWorkerProcessesDeliverEveryRowExactlyOnce() async throws {
        let conninfo = try TestDatabase.migrated()
        let simulated = try Simulated(conninfo: conninfo)
        defer { simulated.stop() }
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 900)
        let workers = try (1...3).map { number in
            try ChildProcess(binary, ["run"], environment: simulated.environment.merging([
                "PGPUSH_WORKER_ID": "worker-\(number)", "PGPUSH_CONNECTIONS": "2", "PGPUSH_RATE_PER_CONNECTION": "100",
            ]) { $1 })
        }
        #expect(try await eventually { try Self.count(database, "delivered") == 900 })
        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers { #expect(await worker.wait(timeout: .seconds(30)) == 0, "\(worker.output)") }
        #expect(try Self.count(database, "delivered") == 900)
        let report = simulated.simulator.report()
        #expect(report.totalRequests == 900)
        #expect(report.duplicateAPNsIDs == 0)
        // Every worker took part: SKIP LOCKED shares the queue.
        let perWorker = try database.query("SELECT count(*) FROM pgpush.delivery_errors").int(0, 0)
        #expect(perWorker == 0)
        #expect(report.connections.count >= 6)
    }

    /// `pgpush run` runs its tasks on one thread of its own (TaskThread), not on the runtime's
    /// default pool: after a delivery the process has that thread and no thread of the
    /// default pool (Dispatch names those after their QoS, "…initiated-qos") was started.
    @Test func theWorkerRunsItsTasksOnOneThreadOfItsOwn() async throws {
        let conninfo = try TestDatabase.migrated()
        let simulated = try Simulated(conninfo: conninfo)
        defer { simulated.stop() }
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 50)
        let worker = try ChildProcess(binary, ["run"], environment: simulated.environment.merging([
            "PGPUSH_WORKER_ID": "task-thread", "PGPUSH_CONNECTIONS": "2",
        ]) { $1 })
        #expect(try await eventually { try Self.count(database, "delivered") == 50 }, "\(worker.lastLines())")
        let directory = "/proc/\(worker.pid)/task"
        let threads = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).compactMap { id in
            (try? String(contentsOfFile: "\(directory)/\(id)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        worker.signal(SIGTERM)
        #expect(await worker.wait(timeout: .seconds(60)) == 0, "\(worker.lastLines())")
        #expect(threads.contains("pgpush-tasks"), "threads: \(threads)")
        #expect(!threads.isEmpty && !threads.contains { $0.hasSuffix("initiated-qos") }, "threads: \(threads)")
    }

    @Test func doctorPassesOnAGoodSetupAndNamesWhatIsWrong() async throws {
        let conninfo = try TestDatabase.migrated()
        let simulated = try Simulated(conninfo: conninfo)
        defer { simulated.stop() }
        chmod(simulated.environment["PGPUSH_KEY_FILE"] ?? "", 0o600)
        let good = try await run(["doctor"], environment: simulated.environment)
        #expect(good.code == 0, "\(good.output)")
        #expect(good.output.contains("✔ database"))
        #expect(good.output.contains("✔ app default: APNs: TLS + HTTP/2"))
        #expect(!good.output.contains("✘"))
        #expect(!good.output.contains("BEGIN PRIVATE KEY"))

        chmod(simulated.environment["PGPUSH_KEY_FILE"] ?? "", 0o644)
        let emptyDatabase = try TestDatabase.empty()
        let bad = try await run(["doctor"], environment: simulated.environment.merging([
            "DATABASE_URL": emptyDatabase, "PGPUSH_APNS_URL": "https://127.0.0.1:1",
        ]) { $1 })
        #expect(bad.code == 1)
        #expect(bad.output.contains("⚠ app default: credentials"))
        #expect(bad.output.contains("chmod 600"))
        #expect(bad.output.contains("✘ migrations: schema pgpush is missing"))
        #expect(bad.output.contains("✘ app default: APNs"))
    }
}
