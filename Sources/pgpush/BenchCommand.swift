import Foundation
import PGPushBench
import PushQueue

enum BenchCommand {
    static let help = """
        pgpush bench — end-to-end benchmark: database, transport, worker, latency, faults, memory, history

        Runs against a throwaway embedded PostgreSQL (or DATABASE_URL) and the APNs simulator
        (`pgpush mock-apns`, a separate process with a generated key). The worker is `pgpush run`
        in its own process, so its CPU time and peak memory are its own. Progress goes to stderr;
        the table to stdout; --json FILE writes every figure.

        The uncapped, capped, latency, steady and scale runs also report what PostgreSQL did per
        notification: WAL bytes, rows inserted/updated/deleted (and the share of HOT updates),
        commits, and the CPU of every server process of the embedded cluster (not with
        --database-url); for the backlog runs, the insert and the claim + outcome apart.

        Scenarios (--scenarios, comma-separated; default all, in this order):
          database   claim + outcome write for --rows rows, no HTTP (the database ceiling)
          transport  --transport-requests HTTP/2 requests to the simulator, no database, uncapped
          uncapped   a worker drains a backlog of --rows rows with no cap; rate, CPU, memory
          fcm        the same drain with FCM rows, to pgpush mock-fcm: rate, CPU, memory beside APNs's
          capped     --cap per connection under a backlog, for each of --capped-connections,
                     --capped-seconds each: steady rate per connection and busiest 1 s window
          latency    --latency-rate rows/s, one per transaction, for --latency-seconds:
                     insert → request at the simulator, insert → outcome written
          steady     for each of --steady-rates: rows inserted one per transaction at that rate for
                     --steady-seconds, twice rate / --cap connections at the cap: worker CPU, PostgreSQL
                     CPU (the inserting session's and the rest), WAL, transactions, insert → request;
                     then the floor: pgbench claiming what is due from a minimal table with prepared
                     statements, as often as rows come and at most every 5 ms
          scale      for each of --scale-workers: that many `pgpush run` processes side by side, each
                     with --scale-connections connections at --cap, under a backlog, --scale-seconds
          faults     --fault-rows rows with --fault-mix and a GOAWAY every --goaway-after streams
          broadcast  --broadcast-rows rows, every --broadcast-every-th a Live Activity update to one of
                     --broadcast-channels broadcast channels, the rest alerts, drained uncapped
          memory     a backlog of --memory-rows rows, the uncapped worker for --memory-seconds: peak RSS
          history    claims timed with no finished rows, then with --history-rows finished rows in the
                     table, and the claim's EXPLAIN ANALYZE; then that many finished rows retired by row
                     deletes (schema 7) and by a partition drop (the same table migrated to 9): time, WAL,
                     claim p99 meanwhile (10,000,000 rows: about 9 minutes, three tables of ~4 GB in turn)
          webpush    --webpush-messages Web Push messages of --payload-bytes sealed (RFC 8291), beside
                     the floor of that work: a new P-256 key pair and one ECDH per message
          lanes      urgent rows inserted one per transaction while a worker (2 connections at --cap)
                     drains --lane-backlog bulk rows: insert → request, beside the same rows with the
                     queue empty (the floor); and claims of 100 rows with lanes beside 017's claim
          web        the status page over --web-finished finished rows (a week of them) and
                     --web-queued queued rows: ms per overview, failures and row page, beside one
                     round trip (the floor) and a count of every row by status (a page without
                     indexed reads); 10,000,000 rows take about 2 minutes to write

        Flags:
          --quick                    about two minutes: 20,000 rows, 5 s capped and latency runs,
                                     4 s steady and scale runs, 10,000 fault and broadcast rows, 100,000-row memory backlog and history (flags below still apply)
          --json FILE                write the full report as JSON
          --scenarios LIST           e.g. database,transport,uncapped
          --rows N                   (default 200000)
          --transport-requests N     (default 200000)
          --connections N            HTTP/2 connections for transport, uncapped, fcm, latency, faults (default 4)
          --payload-bytes N          payload size (default 128)
          --cap N                    per-connection cap for the capped runs (default 100)
          --capped-connections LIST  (default 1,50)
          --capped-seconds N         (default 10)
          --latency-rate N           offered rows/s (default 1000)
          --latency-seconds N        (default 10)
          --latency-cap N            the worker's per-connection cap in the latency run (default 0: none)
          --steady-rates LIST        offered rows/s of the steady runs (default 100,1000)
          --steady-seconds N         (default 10)
          --steady-history N         rows already sent and not yet vacuumed before each steady run, as
                                     between autovacuum's visits (default 0)
          --scale-workers LIST       worker processes side by side (default 1,2,4)
          --scale-connections N      connections per worker in the scale runs (default 50)
          --scale-seconds N          (default 10)
          --fault-rows N             (default 50000)
          --fault-mix LIST           mock-apns --fault-mix (default 503=0.05,429=0.02)
          --goaway-after N           (default 5000)
          --broadcast-rows N         (default 50000)
          --broadcast-every N        every N-th row a broadcast (default 2: half)
          --broadcast-channels N     (default 100)
          --memory-rows N            (default 1000000)
          --memory-seconds N         (default 15)
          --history-rows N           (default 10000000)
          --webpush-messages N       (default 20000)
          --lane-backlog N           bulk rows ahead of the urgent ones (default 100000)
          --web-finished N           finished rows under the status page, over a week (default 10000000)
          --web-queued N             queued rows under the status page (default 1000000)
          --keep-files               keep the scratch folder (simulator logs and reports, worker output)
          --pgbouncer                the steady runs' worker through a PgBouncer in transaction pooling mode
                                     (LISTEN on a session connection); the floor stays direct
          --check                    exit 1 if the figures are inconsistent (a row unaccounted for, a
                                     duplicate without faults, a window over the cap); never on speed
          --database-url URL         [DATABASE_URL] use this database instead of an embedded one; every
                                     pgpush table in it is emptied, so --reset-database must be given too

        Examples:
          pgpush bench --quick
          pgpush bench --json bench.json
          pgpush bench --scenarios uncapped,memory --rows 500000
        """

    static let flags: Set<String> = [
        "help", "quick", "json", "scenarios", "lane-backlog", "web-finished", "web-queued", "rows", "transport-requests", "connections", "payload-bytes", "cap",
        "capped-connections", "capped-seconds", "latency-rate", "latency-seconds", "latency-cap", "steady-rates", "steady-seconds",
        "steady-history",
        "scale-workers", "scale-connections", "scale-seconds", "fault-rows", "fault-mix",
        "goaway-after", "broadcast-rows", "broadcast-every", "broadcast-channels", "memory-rows", "memory-seconds", "history-rows", "webpush-messages", "database-url", "reset-database", "keep-files", "check", "pgbouncer",
    ]
    static let switches: Set<String> = ["help", "quick", "reset-database", "keep-files", "check", "pgbouncer"]

    static func run(_ arguments: Arguments) throws -> Int32 {
        let options = try makeOptions(arguments)
        var databaseURL = arguments.value("database-url") ?? ProcessInfo.processInfo.environment["DATABASE_URL"]
        if databaseURL != nil { databaseURL = try arguments.databaseURL() }
        if databaseURL != nil && !arguments.isSet("reset-database") {
            throw UsageError("with a database URL the benchmark empties every pgpush table in it; add --reset-database to agree")
        }
        guard let sqlDirectory = Migration.locateDirectory() else {
            throw UsageError("the sql/ folder was not found; set PGPUSH_SQL_DIR")
        }
        let benchmark = Benchmark(options: options, progress: { printError($0) })
        let report = try benchmark.run(databaseURL: databaseURL, sqlDirectory: sqlDirectory,
                                       executable: Benchmark.currentExecutable)
        print(report.table())
        if let path = arguments.value("json") {
            try report.jsonData().write(to: URL(fileURLWithPath: path))
        }
        if arguments.isSet("check") {
            let problems = BenchConsistency.problems(report)
            for problem in problems { printError("pgpush bench: inconsistent: \(problem)") }
            return problems.isEmpty ? 0 : 1
        }
        return 0
    }

    static func makeOptions(_ arguments: Arguments) throws(UsageError) -> BenchOptions {
        var options = arguments.isSet("quick") ? BenchOptions.quick : BenchOptions()
        if let text = arguments.value("scenarios") {
            var scenarios: [BenchOptions.Scenario] = []
            for name in text.split(separator: ",") {
                guard let scenario = BenchOptions.Scenario(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                    throw UsageError("--scenarios: unknown \"\(name)\"; known: "
                                     + BenchOptions.Scenario.allCases.map(\.rawValue).joined(separator: ", "))
                }
                scenarios.append(scenario)
            }
            options.scenarios = scenarios
        }
        func integer(_ name: String, _ range: ClosedRange<Int>, _ field: WritableKeyPath<BenchOptions, Int>) throws(UsageError) {
            guard let text = arguments.value(name) else { return }
            guard let value = Int(text.replacingOccurrences(of: "_", with: "")), range.contains(value) else {
                throw UsageError("--\(name) must be an integer in \(range.lowerBound)...\(range.upperBound), got \"\(text)\"")
            }
            options[keyPath: field] = value
        }
        try integer("rows", 1...100_000_000, \.rows)
        try integer("transport-requests", 1...100_000_000, \.transportRequests)
        try integer("connections", 1...64, \.connections)
        try integer("payload-bytes", 20...4096, \.payloadBytes)
        try integer("cap", 1...100_000, \.cap)
        try integer("capped-seconds", 4...3600, \.cappedSeconds)
        try integer("latency-rate", 1...100_000, \.latencyRate)
        try integer("latency-seconds", 1...3600, \.latencySeconds)
        try integer("latency-cap", 0...100_000, \.latencyCap)
        try integer("steady-seconds", 1...3600, \.steadySeconds)
        try integer("steady-history", 0...10_000_000, \.steadyHistory)
        try integer("scale-connections", 1...64, \.scaleConnections)
        try integer("scale-seconds", 2...3600, \.scaleSeconds)
        try integer("fault-rows", 1...100_000_000, \.faultRows)
        try integer("goaway-after", 1...100_000_000, \.goAwayAfter)
        try integer("broadcast-rows", 1...100_000_000, \.broadcastRows)
        try integer("broadcast-every", 1...1_000, \.broadcastEvery)
        try integer("broadcast-channels", 1...10_000, \.broadcastChannels)
        try integer("memory-rows", 1...100_000_000, \.memoryRows)
        try integer("memory-seconds", 1...3600, \.memorySeconds)
        try integer("history-rows", 0...1_000_000_000, \.historyRows)
        try integer("webpush-messages", 10...10_000_000, \.webPushMessages)
        try integer("lane-backlog", 1_000...10_000_000, \.laneBacklog)
        try integer("web-finished", 1_000...100_000_000, \.webFinishedRows)
        try integer("web-queued", 100...10_000_000, \.webQueuedRows)
        if let text = arguments.value("capped-connections") {
            let values = text.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard !values.isEmpty, values.count == text.split(separator: ",").count, values.allSatisfy({ (1...64).contains($0) }) else {
                throw UsageError("--capped-connections is a list of 1...64, e.g. 1,50, got \"\(text)\"")
            }
            options.cappedConnections = values
        }
        func list(_ name: String, _ range: ClosedRange<Int>, _ field: WritableKeyPath<BenchOptions, [Int]>) throws(UsageError) {
            guard let text = arguments.value(name) else { return }
            let values = text.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard !values.isEmpty, values.count == text.split(separator: ",").count, values.allSatisfy({ range.contains($0) }) else {
                throw UsageError("--\(name) is a list of \(range.lowerBound)...\(range.upperBound), got \"\(text)\"")
            }
            options[keyPath: field] = values
        }
        try list("steady-rates", 1...100_000, \.steadyRates)
        try list("scale-workers", 1...16, \.scaleWorkers)
        if let mix = arguments.value("fault-mix") { options.faultMix = mix }
        options.keepFiles = arguments.isSet("keep-files")
        options.throughPgBouncer = arguments.isSet("pgbouncer")
        return options
    }
}
