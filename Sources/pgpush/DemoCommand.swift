import Dispatch
import EmbeddedPostgres
import Foundation
import LocalHTTP
import Locking
import PGPushDemo
import PGPushWeb
import Postgres
import PushQueue
import PushWorker
import Synchronization

enum DemoCommand {
    static let help = """
        pgpush demo — the whole system on embedded defaults, in seconds

        With nothing configured it starts a throwaway PostgreSQL cluster (the installed server
        binaries, in a temporary folder; as the postgres user when run as root), applies the
        migrations, starts the APNs simulator with a freshly generated p8 key and TLS CA, and
        enqueues a realistic mix through pgpush.enqueue / pgpush.enqueue_many:
          ~200 alerts, background pushes, VoIP pushes, a 160-digit token, an unregistered token,
          a background push carrying an alert (only the worker can reject it), a token answered
          503, 503 then 200, one answered 503 every time, one answered 429 then 200, random 503s,
          a row whose expires_at has passed, and a row scheduled a few seconds later.
        A worker then sends everything (2 connections × 100 requests/s, retries in fractions of a
        second instead of the production 1–5 s) while a progress line shows the statuses. At the
        end it prints each row's fate, the monitoring views, what the simulator saw (including the
        most requests per connection in any one second) and the SQL to look for yourself, then
        removes everything it created. Ctrl-C stops the worker, cleans up and exits 130.

        While it runs, the status page of pgpush web is served on a free port of 127.0.0.1
        (its address is printed first; the token its requeue and cancel forms ask for is made
        up for this run and printed with it). It stops with the demo; --keep-page keeps it,
        and the database, up after the report until Ctrl-C.

        With DATABASE_URL (or --database-url) it uses that database instead: it migrates it,
        enqueues under the app name "demo" and reports only that app's rows; it never drops
        anything there, so the rows stay for you to query.

        Flags:
          --database-url URL   use this database instead of a throwaway cluster [DATABASE_URL]
          --alerts N           how many plain alerts to send (default 200)
          --verbose            show the worker's warnings (every APNs error) on stderr
          --keep-page          after the report, keep the status page up until Ctrl-C

        Exit codes: 0 every row ended as expected, 1 something did not (or a failure),
        2 wrong usage, 130 interrupted.

        Examples:
          pgpush demo
          DATABASE_URL=postgres://me@localhost/scratch pgpush demo
          pgpush demo --alerts 1000 --verbose
        """

    static let flags: Set<String> = ["help", "database-url", "alerts", "verbose", "keep-page"]
    static let switches: Set<String> = ["help", "verbose", "keep-page"]

    static func run(_ arguments: Arguments) throws -> Int32 {
        var alerts = 200
        if let text = arguments.value("alerts") {
            guard let value = Int(text), (0...100_000).contains(value) else { throw UsageError("--alerts must be 0…100000, got \(text)") }
            alerts = value
        }
        guard let sqlDirectory = Migration.locateDirectory() else {
            throw UsageError("cannot find the sql/ migrations folder: set PGPUSH_SQL_DIR")
        }
        var given = arguments.value("database-url") ?? ProcessInfo.processInfo.environment["DATABASE_URL"]
        if given != nil { given = try arguments.databaseURL() }
        let interruption = DemoInterruption()
        defer { interruption.disarm() }

        var cluster: EmbeddedPostgres?
        defer { cluster?.stop() }
        let conninfo: String
        if let given {
            conninfo = given
            say("using the database of DATABASE_URL; demo rows go under app \"demo\"")
        } else {
            say("starting a throwaway PostgreSQL cluster…")
            let started = try EmbeddedPostgres.start()
            cluster = started
            interruption.cleanUp = { started.stop() }
            conninfo = started.conninfo()
            say("PostgreSQL running in \(started.directory) (socket only, removed at exit)")
        }
        if interruption.happened { return 130 }

        let migrations = try Migration.load(directory: sqlDirectory)
        let applied = try MigrationRunner(migrations: migrations).migrate(try PostgresConnection(conninfo: conninfo))
        say(applied.isEmpty ? "schema pgpush is up to date" : "applied \(applied.count) migration(s) from \(sqlDirectory)")
        if interruption.happened { return 130 }

        // The page reads the same database as its owner; its token lives as long as this run.
        let pageToken = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let site = StatusSite(conninfo: conninfo, token: pageToken, version: PGPushVersion.current)
        let page: HTTPServer
        do {
            page = try HTTPServer(address: "127.0.0.1:0", setting: "the demo's status page", limits: StatusSite.limits) { site.answer($0) }
        } catch {
            throw UsageError(error.description)
        }
        defer { page.stop() }
        say("status page: http://127.0.0.1:\(page.port)/ (token for its requeue and cancel forms: \(pageToken)); "
            + (arguments.isSet("keep-page") ? "it stays up after the report until Ctrl-C" : "up until the demo ends (--keep-page keeps it)"))

        var options = DemoOptions(conninfo: conninfo)
        if arguments.isSet("verbose") { options.workerLog = .init(minimum: .warning) }
        let scenario = DemoScenario.standard(alerts: alerts)
        // Twice the time the rate cap needs, plus a minute for retries and the scheduled row.
        let secondsAtFullRate = scenario.notificationCount / (options.connections * options.ratePerConnection)
        options.timeout = .seconds(60 + 2 * secondsAtFullRate)
        let demo = DemoRun(scenario: scenario, options: options)
        interruption.demo = demo
        let printer = ProgressPrinter(isTerminal: isatty(STDERR_FILENO) == 1)
        let outcome = Locked<Result<DemoResult, any Error>?>(nil)
        _ = try blockOn {
            do {
                let result = try await demo.run(narrate: { say($0) }, progress: { printer.show($0, elapsed: $1) })
                outcome.withLock { $0 = .success(result) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
        }
        printer.finish()
        guard let result = try outcome.withLock({ $0 })?.get() else { return 1 }

        let psql = given.map { _ in "psql \"$DATABASE_URL\"" }
        print(DemoReport(result: result, app: options.app, psqlCommand: psql).rendered(), terminator: "")
        if result.interrupted { return 130 }
        if arguments.isSet("keep-page") {
            fflush(nil)
            say("the status page is still up at http://127.0.0.1:\(page.port)/ — Ctrl-C ends the demo")
            interruption.waitAfterReport()
        }
        return result.succeeded ? 0 : 1
    }

    static func say(_ line: String) {
        StandardStreams.writeError("pgpush demo: \(line)\n")
    }
}

/// SIGINT/SIGTERM during the demo: the first stops the worker and lets the demo clean
/// up; if that takes more than a few seconds (the database went down with the
/// terminal's Ctrl-C), or on a second signal, it cleans up and exits 130 at once.
final class DemoInterruption {
    private let state = InterruptionState()
    private var sources: [any DispatchSourceSignal] = []

    init() {
        sources = [SIGINT, SIGTERM].map { [state] number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { state.handle() }
            source.resume()
            return source
        }
    }

    var happened: Bool { state.happened }

    var demo: DemoRun? {
        get { state.handles.withLock { $0.demo } }
        set { state.handles.withLock { $0.demo = newValue } }
    }

    var cleanUp: (@Sendable () -> Void)? {
        get { state.handles.withLock { $0.cleanUp } }
        set { state.handles.withLock { $0.cleanUp = newValue } }
    }

    /// Blocks until SIGINT or SIGTERM, which now only end this wait: the run is over and
    /// reported, and what is left to clean up the caller's `defer`s do.
    func waitAfterReport() {
        let signalled = DispatchSemaphore(value: 0)
        state.handles.withLock { $0.afterReport = signalled }
        signalled.wait()
    }

    func disarm() {
        sources.forEach { $0.cancel() }
        sources = []
    }
}

/// What the signal handler reaches from the dispatch queue.
private final class InterruptionState: Sendable {
    private let received = Atomic<Int>(0)
    let handles = Locked<(demo: DemoRun?, cleanUp: (@Sendable () -> Void)?, afterReport: DispatchSemaphore?)>((nil, nil, nil))

    var happened: Bool { received.load(ordering: .sequentiallyConsistent) > 0 }

    func handle() {
        let (demo, cleanUp, afterReport) = handles.withLock { ($0.demo, $0.cleanUp, $0.afterReport) }
        if let afterReport {
            afterReport.signal()
            return
        }
        let count = received.add(1, ordering: .sequentiallyConsistent).newValue
        if count == 1 {
            StandardStreams.writeError("\npgpush demo: interrupted, stopping the worker and cleaning up…\n")
            demo?.stop()
            DispatchQueue.global().asyncAfter(deadline: .now() + 8) {
                demo?.removeTemporaryFiles()
                cleanUp?()
                // The worker and simulator threads may still be in OpenSSL: skip its atexit cleanup.
                fflush(nil)
                _exit(130)
            }
        } else {
            demo?.removeTemporaryFiles()
            cleanUp?()
            fflush(nil)
            _exit(130)
        }
    }
}

/// The live status line: rewritten in place on a terminal, a line a second otherwise.
final class ProgressPrinter: Sendable {
    private let isTerminal: Bool
    private let lastLine = Locked<(text: String, printedAt: ContinuousClock.Instant?)>(("", nil))

    init(isTerminal: Bool) { self.isTerminal = isTerminal }

    func show(_ progress: DemoProgress, elapsed: Double) {
        let line = progress.line(elapsedSeconds: elapsed)
        let output: String? = lastLine.withLock { last in
            if isTerminal {
                last.text = line
                return "\r\u{1B}[K" + line
            }
            let now = ContinuousClock.now
            let due = last.printedAt.map { now - $0 >= .seconds(1) } ?? true
            guard due || progress.isFinished else { return nil }
            last.printedAt = now
            last.text = line
            return line + "\n"
        }
        if let output { StandardStreams.writeError(output) }
    }

    func finish() {
        if isTerminal && !lastLine.withLock({ $0.text }).isEmpty { StandardStreams.writeError("\n") }
    }
}
