import Foundation
import Postgres
import PushQueue

/// Lanes (`lanes` scenario), two figures each beside its yardstick in the same run:
/// - an urgent row's insert → request while a worker drains a bulk backlog at the cap,
///   beside the same rows with the queue empty (the floor: what an urgent row costs with
///   nothing ahead of it); without lanes it would wait for the whole backlog;
/// - the claim's cost with lanes (one index descent per lane) beside the claim before lanes
///   (one ordered scan of one index: migration 017's claim over its index, in a second
///   database with the same rows), the same rows claimed and rolled back each time.
enum LaneRun {
    /// Urgent rows measured, inserted one per transaction, this far apart.
    static let urgentRows = 20
    static let urgentSpacing: Duration = .milliseconds(250)
    static let urgentTokenBase = 90_000_000
    static let claimsTimed = 200
    /// Claims of one row (a steady low rate claims as rows come) and of a hundred.
    static let claimBatches = [1, 100]

    static func run(in context: BenchContext) throws -> LanesResult {
        let options = context.options
        let conninfo = try context.database.fresh("lanes")
        defer { context.database.discard(conninfo) }
        let connection = try PostgresConnection(conninfo: conninfo)
        let backlog = options.laneBacklog

        var claims: [LanesResult.ClaimCost] = []
        let beforeConninfo = try context.database.fresh("lanes017")
        if beforeConninfo != conninfo {
            defer { context.database.discard(beforeConninfo) }
            context.progress("lanes: claims of 1 and of 100 rows with lanes and with 017's claim, in alternating blocks")
            let before = try PostgresConnection(conninfo: beforeConninfo)
            for database in [connection, before] {
                try BenchRows.fill(database, count: max(backlog, 1000), payloadBytes: options.payloadBytes)
            }
            claims = try claimCosts(lanes: connection, before: before, sqlDirectory: context.database.sqlDirectory)
            try connection.execute(script: "TRUNCATE pgpush.notifications")
        } else {
            context.progress("lanes: the claims' comparison needs two databases (the embedded cluster): left out")
        }

        context.progress("lanes: \(backlog) bulk rows, a worker at \(options.cap)/s × 2 connections, \(urgentRows) urgent rows")
        try BenchRows.fill(connection, count: backlog, payloadBytes: options.payloadBytes)
        try connection.execute(script: "UPDATE pgpush.notifications SET lane = 'bulk'")
        try connection.execute(script: "VACUUM ANALYZE pgpush.notifications")
        let simulator = try SimulatorProcess(executable: context.executable, credentials: context.credentials,
                                             directory: context.directory, name: "lanes", logRequests: true)
        let worker = try WorkerProcess(executable: context.executable, databaseURL: conninfo, simulator: simulator,
                                       credentials: context.credentials, connections: 2, ratePerConnection: options.cap,
                                       directory: context.directory, name: "lanes")
        do {
            // Sending under the backlog before the measured rows.
            try waitFor(seconds: 30, worker: worker) {
                try connection.query("SELECT count(*) > 200 FROM pgpush.notifications WHERE status = 'delivered'").bool(0, 0) == true
            }
            try insertUrgent(connection, firstToken: urgentTokenBase)
            try waitFor(seconds: 60, worker: worker) { try urgentFinished(connection, firstToken: urgentTokenBase) }
            let delivered = try connection.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'delivered'").int(0, 0) ?? 0
            // The floor: the queue emptied and nothing left in flight, the same rows again.
            try connection.execute(script: """
                UPDATE pgpush.notifications SET status = 'cancelled', finished_at = now() WHERE status = 'queued'
                """)
            try waitFor(seconds: 60, worker: worker) {
                try connection.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'sending'").int(0, 0) == 0
            }
            try insertUrgent(connection, firstToken: urgentTokenBase + urgentRows)
            try waitFor(seconds: 60, worker: worker) { try urgentFinished(connection, firstToken: urgentTokenBase + urgentRows) }
            _ = try worker.stop()
            _ = try simulator.stop()
            let latencies = try insertToRequest(connection, simulator: simulator, tokens: urgentTokenBase..<urgentTokenBase + 2 * urgentRows)
            let underBacklog = latencies.filter { $0.key < urgentTokenBase + urgentRows }.map(\.value)
            let emptyQueue = latencies.filter { $0.key >= urgentTokenBase + urgentRows }.map(\.value)
            return LanesResult(
                backlog: backlog, cap: options.cap, connections: 2, urgentRows: urgentRows,
                urgentUnderBacklog: LatencySummary(milliseconds: underBacklog), urgentEmptyQueue: LatencySummary(milliseconds: emptyQueue),
                withoutLanesWaitSeconds: Double(backlog - delivered) / Double(2 * options.cap),
                claims: claims)
        } catch {
            _ = worker.process.stop(signal: SIGKILL)
            _ = try? simulator.stop()
            throw error
        }
    }

    /// Insert → request (created_at to the request's arrival at the simulator) per token number, in ms.
    private static func insertToRequest(_ connection: PostgresConnection, simulator: SimulatorProcess,
                                        tokens: Range<Int>) throws -> [Int: Double] {
        let numbers = Dictionary(uniqueKeysWithValues: tokens.map { (BenchRows.token($0), $0) })
        let arrivals = try LatencyRun.firstArrivals(simulator)
        let rows = try connection.query("""
            SELECT device_token, extract(epoch FROM created_at) * 1000 FROM pgpush.notifications
             WHERE device_token >= $1 AND device_token < $2
            """, [BenchRows.token(tokens.lowerBound), BenchRows.token(tokens.upperBound)])
        var latencies: [Int: Double] = [:]
        for row in 0..<rows.rowCount {
            if let token = rows.string(row, 0), let number = numbers[token], let created = rows.double(row, 1),
               let arrived = arrivals[token] {
                latencies[number] = arrived - created
            }
        }
        return latencies
    }

    private static func insertUrgent(_ connection: PostgresConnection, firstToken: Int) throws {
        let start = ContinuousClock.now
        for index in 0..<urgentRows {
            let due = start + urgentSpacing * index
            if due > .now { Thread.sleep(forTimeInterval: Double((due - .now) / .microseconds(1)) / 1e6) }
            try connection.query("INSERT INTO pgpush.notifications (device_token, payload, lane) VALUES ($1, $2::jsonb, 'urgent')",
                                 [BenchRows.token(firstToken + index), #"{"aps":{"alert":"123456"}}"#])
        }
    }

    private static func urgentFinished(_ connection: PostgresConnection, firstToken: Int) throws -> Bool {
        try connection.query("""
            SELECT count(*) FROM pgpush.notifications WHERE lane = 'urgent' AND finished_at IS NOT NULL
               AND device_token >= $1 AND device_token < $2
            """, [BenchRows.token(firstToken), BenchRows.token(firstToken + urgentRows)]).int(0, 0) == urgentRows
    }

    private static func waitFor(seconds: Int, worker: WorkerProcess, _ condition: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while try !condition() {
            try worker.checkAlive()
            guard ContinuousClock.now < deadline else { throw BenchError("lanes: not done within \(seconds) s") }
            usleep(20_000)
        }
    }

    /// Milliseconds per claim of each of `claimBatches` rows, with lanes in one database and with
    /// 017's claim over its index in another holding the same rows, in alternating blocks so
    /// that both meet the machine in the same state; each claim rolled back (the same rows each
    /// time).
    private static func claimCosts(lanes: PostgresConnection, before: PostgresConnection,
                                   sqlDirectory: String) throws -> [LanesResult.ClaimCost] {
        try installClaimBeforeLanes(before, sqlDirectory: sqlDirectory)
        // Built whole as the other one is, not grown row by row.
        try lanes.execute(script: "REINDEX INDEX pgpush.notifications_queued_due")
        try lanes.execute(script: "ANALYZE pgpush.notifications")
        let fromLanes = try NotificationQueue(connection: lanes, workerID: "bench-lanes").claimFrom()
        let fromBefore = try NotificationQueue(connection: before, workerID: "bench-lanes").claimFrom()
        func time(_ connection: PostgresConnection, _ function: String, from: Int64, batch: Int, claims: Int) throws -> [Double] {
            var milliseconds: [Double] = []
            for _ in 0..<claims {
                try connection.execute(script: "BEGIN")
                let started = ContinuousClock.now
                let claimed = try connection.query("SELECT count(*) FROM \(function)('bench', 'default', 'apns', $1, 60, true, $2, NULL)",
                                                   [batch, from]).int(0, 0)
                milliseconds.append(Double((ContinuousClock.now - started) / .nanoseconds(1)) / 1e6)
                try connection.execute(script: "ROLLBACK")
                guard claimed == batch else { throw BenchError("lanes: \(function) claimed \(claimed ?? 0) of \(batch)") }
            }
            return milliseconds
        }
        var costs: [LanesResult.ClaimCost] = []
        for batch in claimBatches {
            // The first few plan and warm up.
            _ = try time(lanes, "pgpush.claim", from: fromLanes, batch: batch, claims: 5)
            _ = try time(before, "pgpush_bench.claim_before_lanes", from: fromBefore, batch: batch, claims: 5)
            var withLanes: [Double] = [], beforeLanes: [Double] = []
            for _ in 0..<(claimsTimed / 20) {
                withLanes += try time(lanes, "pgpush.claim", from: fromLanes, batch: batch, claims: 20)
                beforeLanes += try time(before, "pgpush_bench.claim_before_lanes", from: fromBefore, batch: batch, claims: 20)
            }
            costs.append(LanesResult.ClaimCost(rows: batch, withLanes: LatencySummary(milliseconds: withLanes),
                                               beforeLanes: LatencySummary(milliseconds: beforeLanes)))
        }
        return costs
    }

    /// Migration 017's claim, as it was, in a schema of the bench's own, with the index it read.
    private static func installClaimBeforeLanes(_ connection: PostgresConnection, sqlDirectory: String) throws {
        let migration = try String(contentsOfFile: sqlDirectory + "/017_web_push.sql", encoding: .utf8)
        let header = "CREATE OR REPLACE FUNCTION pgpush.claim(worker_id text, app text, service text,"
        guard let start = migration.range(of: header),
              let end = migration.range(of: "\n$$;\n", range: start.upperBound..<migration.endIndex) else {
            throw BenchError("lanes: 017's claim not found in \(sqlDirectory)/017_web_push.sql")
        }
        // Its body names its parameters after the function (`claim.app`).
        let function = String(migration[start.lowerBound..<end.upperBound])
            .replacingOccurrences(of: "FUNCTION pgpush.claim(", with: "FUNCTION pgpush_bench.claim_before_lanes(")
            .replacingOccurrences(of: " claim.", with: " claim_before_lanes.")
            .replacingOccurrences(of: "(claim.", with: "(claim_before_lanes.")
        try connection.execute(script: """
            CREATE SCHEMA IF NOT EXISTS pgpush_bench;
            DROP INDEX pgpush.notifications_queued_due;
            CREATE INDEX bench_queued_due_before_lanes ON pgpush.notifications (app, service, send_after, id)
                WHERE status = 'queued';
            ANALYZE pgpush.notifications;
            \(function)
            """)
    }
}
