import Foundation
import Postgres

/// The worker at a steady offered rate, as in production: rows inserted one per transaction
/// at `rate`/s, with twice the connections at the cap the rate needs (2 × rate / cap,
/// rounded up), as an operator leaves room. What it costs per notification once running:
/// the worker's CPU from the first measured insert to its exit (start-up, first TLS
/// handshakes and JWT excluded), PostgreSQL's CPU (the inserting session's and the rest's)
/// and WAL from the first measured insert until every row is finished; the floor (FloorRun)
/// at the same rate, measured right after on the same cluster; and h2load sending as much
/// over as many connections (TransportPeerRun), the peer for the worker's own CPU.
enum SteadyRun {
    static func run(rate: Int, in context: BenchContext) throws -> SteadyResult {
        let options = context.options
        let connections = 2 * max(1, (rate + options.cap - 1) / options.cap)
        let name = "steady\(rate)"
        let conninfo = try context.database.fresh(name)
        defer { context.database.discard(conninfo) }
        let meter = try CostMeter(conninfo: conninfo, database: context.database)
        let inserter = try PostgresConnection(conninfo: conninfo)
        let simulator = try SimulatorProcess(executable: context.executable, credentials: context.credentials,
                                             directory: context.directory, name: name, logRequests: true)
        if options.steadyHistory > 0 { try Self.sentHistory(inserter, rows: options.steadyHistory) }
        let before = try meter.snapshot()
        let urls = context.database.workerURLs(conninfo)
        let worker = try WorkerProcess(executable: context.executable, databaseURL: urls.database,
                                       listenDatabaseURL: urls.listen, simulator: simulator,
                                       credentials: context.credentials, connections: connections,
                                       ratePerConnection: options.cap, directory: context.directory, name: name)
        do {
            try BenchRows.fill(inserter, count: 50, payloadBytes: options.payloadBytes, firstToken: LatencyRun.warmUpTokenBase,
                               analyze: false)
            try LatencyRun.waitUntilDrained(meter, worker: worker, timeout: .seconds(30))

            let total = rate * options.steadySeconds
            context.progress("steady: \(rate)/s for \(options.steadySeconds) s, \(connections) connection(s) at \(options.cap)/s")
            let windowStart = try meter.snapshot()
            let workerAtStart = ProcessCPU.seconds(of: worker.process.pid) ?? 0
            let inserterAtStart = ProcessCPU.preciseSeconds(of: inserter.backendPID)
            let machineAtStart = MachineCPU.now()
            let insertSeconds = try SteadyInserter.insert(inserter, rate: rate, count: total, payloadBytes: options.payloadBytes,
                                                          alive: worker.checkAlive)
            let lastInsert = ContinuousClock.now
            let unfinishedAtLastInsert = try meter.poll(BenchRows.unfinished)
            try LatencyRun.waitUntilDrained(meter, worker: worker, timeout: .seconds(max(60, total / 200)))
            let drained = ContinuousClock.now
            try meter.flush(inserter)
            let windowEnd = try meter.snapshot()
            let inserterAtEnd = ProcessCPU.preciseSeconds(of: inserter.backendPID)
            let machineBusy = MachineCPU.now().busyCPUs(since: machineAtStart)
            let usage = try worker.stop()
            let (report, _) = try simulator.stop()
            try context.database.releasePooledSessions(conninfo)
            try meter.waitForOtherSessions(except: [inserter.backendPID])
            let after = try meter.snapshot()
            let statuses = try BenchRows.statusCounts(meter.connection)
            let (toRequest, _) = try LatencyRun.latencies(meter.connection, simulator: simulator)
            let whole = CostMeter.cost(from: before, to: after, notifications: total + 50)
            let window = CostMeter.cost(from: windowStart, to: windowEnd, notifications: total)
            let workerCPU = usage.cpuSeconds - workerAtStart
            let seconds = Double((drained - windowStart.at) / .microseconds(1)) / 1e6
            var insertSession: Double?
            if let first = inserterAtStart, let last = inserterAtEnd { insertSession = (last - first) * 1e6 / Double(total) }
            return SteadyResult(
                offeredPerSecond: rate, historyRows: options.steadyHistory, throughPgBouncer: context.database.isPooled,
                insertedPerSecond: Double(total) / insertSeconds, connections: connections,
                ratePerConnection: options.cap, rows: total, seconds: seconds,
                finished: (statuses["delivered"] ?? 0) + (statuses["failed"] ?? 0) - 50 - options.steadyHistory,
                unfinishedAtLastInsert: unfinishedAtLastInsert,
                drainSecondsAfterLastInsert: Double((drained - lastInsert) / .microseconds(1)) / 1e6,
                worker: usage, workerCPUSeconds: workerCPU,
                workerCPUMicrosecondsPerNotification: workerCPU * 1e6 / Double(total),
                workerBusyCPUs: workerCPU / max(seconds, 1e-3),
                serverCPUMicrosecondsPerNotification: window.serverCPUMicrosecondsPerNotification,
                serverBusyCPUs: window.serverBusyCPUs,
                walBytesPerNotification: window.walBytesPerNotification,
                insertSessionCPUMicrosecondsPerNotification: insertSession, machineBusyCPUs: machineBusy,
                simulatorRequests: report.totalRequests, duplicateAcceptedAPNsIDs: report.duplicateAcceptedAPNsIDs,
                insertToRequest: LatencySummary(milliseconds: toRequest),
                workerTransactionsPerNotification: Double(whole.commits - Int64(total + 50)) / Double(total + 50),
                cost: whole, floor: try FloorRun.run(rate: rate, in: context),
                pooledFloor: context.database.isPooled ? try FloorRun.run(rate: rate, throughPooler: true, in: context) : nil,
                transportPeer: try TransportPeerRun.run(rate: rate, connections: connections, in: context))
        } catch {
            _ = worker.process.stop(signal: SIGKILL)
            _ = try? simulator.stop()
            throw error
        }
    }
    /// `rows` notifications sent an hour ago, as the claim's index sees them between
    /// autovacuum's visits: inserted queued and finished in one transaction (so the worker
    /// never claims them), each leaving a dead entry at the head of the due rows' index.
    /// Autovacuum stays off for the table's partitions during the run, as it would be between
    /// two of its visits.
    /// Above the warm-up's tokens, so the run's latencies leave these rows out.
    static let historyTokenBase = 2 * LatencyRun.warmUpTokenBase

    static func sentHistory(_ connection: PostgresConnection, rows: Int) throws {
        try connection.execute(script: """
            DO $$
            DECLARE
                part record;
            BEGIN
                FOR part IN SELECT partition FROM pgpush.history_partitions WHERE table_name = 'notifications' LOOP
                    EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false)', part.partition);
                END LOOP;
            END
            $$;
            """)
        try connection.transaction {
            try connection.query("""
                INSERT INTO pgpush.notifications (device_token, payload, send_after)
                SELECT lpad(to_hex($2::bigint + g), 64, '0'), '{"aps":{"alert":"sent"}}', now() - interval '1 hour'
                  FROM generate_series(1, $1::int) AS g
                """, [rows, historyTokenBase])
            try connection.query("""
                UPDATE pgpush.notifications SET status = 'delivered', claim_count = 1, attempts = 1, finished_at = now()
                 WHERE status = 'queued'
                """)
        }
    }
}
