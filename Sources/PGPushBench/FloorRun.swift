import Foundation
import Postgres
import PushWorker
import Spawn

/// The least a worker could cost PostgreSQL for the steady runs' work, measured in the same
/// run on the same cluster: rows inserted one per transaction at the same rate, and
/// pgbench (PostgreSQL's own client, not pgpush) claiming and finishing them with prepared
/// statements on a minimal table. It claims as often as pgpush's claim loop polls for rows
/// coming at that rate (`ClaimSchedule.pollingInterval`): at 100/s every 20 ms, two rows a
/// claim, at 1,000/s every 5 ms, about five, so both wait as long for a claim. No wake-ups, no leases
/// renewed, no error rows, no partitions, no row-level security: what is left is a claim and
/// an outcome, each a transaction, for every row or batch. pgpush's figures are read
/// against it.
///
/// When the worker goes through PgBouncer (`--pgbouncer`), the floor runs twice: as above,
/// and through the same PgBouncer. PgBouncer 1.18 in transaction mode carries no prepared
/// statement from one transaction to the next, so there pgbench sends each statement
/// unnamed (`-M extended`), as any worker behind it must: the least the same work costs
/// through that pooler.
enum FloorRun {
    /// The minimal queue: an id, what is sent, a status, a lease and a finish time.
    static let schema = """
        CREATE TABLE public.floor_queue (
            id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            device_token text NOT NULL,
            payload      jsonb NOT NULL,
            status       text NOT NULL DEFAULT 'queued',
            locked_until timestamptz,
            finished_at  timestamptz
        );
        CREATE INDEX floor_queue_queued ON public.floor_queue (id) WHERE status = 'queued';
        """

    static let insertSQL = "INSERT INTO public.floor_queue (device_token, payload) VALUES ($1, $2::jsonb)"

    /// One pgbench transaction: claim what is due (up to `limit`) and write its outcome, each
    /// in a transaction of its own as a worker would.
    /// The claim starts after the last id it took (pgbench keeps `last` from one transaction
    /// to the next), so it never steps over the index entries of rows already claimed that
    /// VACUUM has not removed yet: the cheapest claim there is, with a single claimer.
    static func script(limit: Int) -> String {
        """
        WITH claimed AS (UPDATE public.floor_queue q SET status = 'sending', locked_until = now() + interval '30 s' \
        WHERE q.id IN (SELECT id FROM public.floor_queue WHERE id > :last AND status = 'queued' ORDER BY id \
        LIMIT \(limit) FOR UPDATE SKIP LOCKED) RETURNING q.id) \
        SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(max(id), :last) AS last FROM claimed \\gset
        UPDATE public.floor_queue SET status = 'delivered', finished_at = now(), locked_until = NULL \
        WHERE id = ANY (:ids::bigint[]);

        """
    }

    /// `throughPooler`: pgbench reaches the cluster through the bench's PgBouncer, unprepared.
    static func run(rate: Int, throughPooler: Bool = false, in context: BenchContext) throws -> FloorResult? {
        guard let pgbench = context.database.pgbench else { return nil }
        let options = context.options
        let name = "floor\(rate)" + (throughPooler ? "_pooled" : "")
        let conninfo = try context.database.fresh(name)
        defer { context.database.discard(conninfo) }
        let meter = try CostMeter(conninfo: conninfo, database: context.database)
        try meter.poll { try $0.execute(script: schema) }
        let inserter = try PostgresConnection(conninfo: conninfo)
        let scriptPath = context.directory + "/\(name).pgbench"
        let drainPath = context.directory + "/\(name)-drain.pgbench"
        try script(limit: 100).write(toFile: scriptPath, atomically: true, encoding: .utf8)
        try script(limit: 100_000).write(toFile: drainPath, atomically: true, encoding: .utf8)
        let total = rate * options.steadySeconds
        context.progress("floor: \(rate)/s for \(options.steadySeconds) s, pgbench claiming what is due")

        let windowStart = try meter.snapshot()
        let inserterAtStart = ProcessCPU.preciseSeconds(of: inserter.backendPID)
        let claimsPerSecond = min(rate, Int((Duration.seconds(1) / ClaimSchedule.pollingInterval(rowRate: Double(rate))).rounded()))
        let mode = throughPooler ? "extended" : "prepared"
        let claimerConninfo = throughPooler ? context.database.workerURLs(conninfo).database : conninfo
        let claimer = try ChildProcess.spawn(pgbench, ["-n", "-M", mode, "-c", "1", "-D", "last=0", "-R", String(claimsPerSecond),
                                                       "-T", String(options.steadySeconds), "-f", scriptPath, claimerConninfo],
                                             environment: [:], outputPath: context.directory + "/\(name).log")
        do {
            _ = try SteadyInserter.insert(inserter, rate: rate, count: total, payloadBytes: options.payloadBytes,
                                          sql: insertSQL) { }
        } catch {
            _ = claimer.stop(signal: SIGKILL)
            throw error
        }
        let (status, _) = claimer.stop(signal: nil)
        guard status == 0 else { throw BenchError("pgbench exited with status \(status); see \(name).log") }
        // What the rate left queued at the end, in one more claim.
        let drain = try ChildProcess.spawn(pgbench, ["-n", "-M", mode, "-t", "1", "-D", "last=0", "-f", drainPath, claimerConninfo],
                                           environment: [:], outputPath: context.directory + "/\(name)-drain.log")
        guard drain.stop(signal: nil).status == 0 else { throw BenchError("pgbench's drain failed; see \(name)-drain.log") }
        try meter.flush(inserter)
        let inserterAtEnd = ProcessCPU.preciseSeconds(of: inserter.backendPID)
        if throughPooler { try context.database.releasePooledSessions(conninfo) }
        try meter.waitForOtherSessions(except: [inserter.backendPID])
        let windowEnd = try meter.snapshot()
        let finished = try meter.poll { try $0.query("SELECT count(*) FROM public.floor_queue WHERE status = 'delivered'") }
            .int(0, 0) ?? 0
        let cost = CostMeter.cost(from: windowStart, to: windowEnd, notifications: total)
        var insertSession: Double?
        if let first = inserterAtStart, let last = inserterAtEnd { insertSession = (last - first) * 1e6 / Double(total) }
        return FloorResult(
            offeredPerSecond: rate, throughPgBouncer: throughPooler, rows: total, finished: finished,
            serverCPUMicrosecondsPerNotification: cost.serverCPUMicrosecondsPerNotification,
            insertSessionCPUMicrosecondsPerNotification: insertSession,
            walBytesPerNotification: cost.walBytesPerNotification,
            workerTransactionsPerNotification: Double(cost.commits - Int64(total)) / Double(max(total, 1)),
            cost: cost)
    }
}

/// The floor at one rate (FloorRun).
package struct FloorResult: Sendable, Codable {
    package var offeredPerSecond: Int
    /// pgbench went through PgBouncer, its statements unnamed.
    package var throughPgBouncer: Bool
    package var rows: Int
    package var finished: Int
    /// Every server process, the inserting session's backend and the bench's observer not.
    package var serverCPUMicrosecondsPerNotification: Double?
    package var insertSessionCPUMicrosecondsPerNotification: Double?
    package var walBytesPerNotification: Double
    /// Commits other than the inserts, per notification.
    package var workerTransactionsPerNotification: Double
    package var cost: DatabaseCost

    /// PostgreSQL's CPU the claiming caused, per notification: every server process less
    /// the inserting session.
    package var causedByWorkerMicroseconds: Double? {
        guard let server = serverCPUMicrosecondsPerNotification else { return nil }
        return server - (insertSessionCPUMicrosecondsPerNotification ?? 0)
    }
}
