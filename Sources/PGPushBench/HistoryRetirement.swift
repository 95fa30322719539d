import Dispatch
import Foundation
import Locking
import Postgres
import PushQueue

/// Retiring finished history both ways, on the same rows: `rows` notifications delivered
/// 30 days ago (one in `keyedEvery` with an idempotency key), written into a database at
/// schema 007, where `pgpush.prune` deletes them row by row; and the same rows written at
/// 007 and migrated to partitions (the conversion is timed too), where prune drops the
/// partition that holds them. Each retirement is timed, its WAL measured (the insert
/// position before and after), and a claimer on its own connection claims 10 fresh rows
/// every 10 ms throughout, first for a few seconds before (the baseline), then during.
package enum HistoryRetirement {
    static let retention = "7 days"
    static let keyedEvery = 10
    static let baselineSeconds = 5.0

    package static func run(database: BenchDatabase, rows: Int, payloadBytes: Int,
                           progress: @escaping @Sendable (String) -> Void) throws -> HistoryRetirementResult {
        func filledAt007(_ name: String) throws -> String {
            let conninfo = try database.fresh(name, upToVersion: 7)
            try ClaimAtScale.addFinishedRows(PostgresConnection(conninfo: conninfo), count: rows, firstToken: 1,
                                             payloadBytes: payloadBytes, keyedEvery: keyedEvery, label: "retire (\(name))",
                                             progress: progress)
            return conninfo
        }

        let deletes = try filledAt007("rowdeletes")
        progress("retire: row deletes (pgpush.prune of 007, batches of 5000)")
        let rowDeletes = try measure(conninfo: deletes, payloadBytes: payloadBytes) { connection in
            var total = 0
            while true {
                let deleted = try connection.query("SELECT pgpush.prune($1::interval, 5000)", [retention]).int(0, 0) ?? 0
                total += deleted
                if deleted < 5000 { return total }
            }
        }
        database.discard(deletes)
        progress(String(format: "retire: row deletes: %d rows in %.1f s, WAL %.1f MB, claim p99 %.1f ms",
                        rowDeletes.retired, rowDeletes.seconds, Double(rowDeletes.walBytes) / 1e6,
                        rowDeletes.claimsDuring?.p99 ?? .nan))

        let drops = try filledAt007("partitions")
        progress("retire: migrating the filled table to partitions")
        let connection = try PostgresConnection(conninfo: drops)
        let walBefore = try walPosition(connection)
        let migrationStarted = ContinuousClock.now
        try database.migrate(drops)
        let migrationSeconds = seconds(since: migrationStarted)
        let migrationWAL = try walPosition(connection) - walBefore
        try connection.execute(script: "VACUUM (ANALYZE) pgpush.notifications")
        progress("retire: partition drops (pgpush.prune of 009)")
        let partitionDrops = try measure(conninfo: drops, payloadBytes: payloadBytes) { connection in
            try NotificationQueue(connection: connection, workerID: "bench-prune")
                .prune(olderThan: .seconds(7 * 86_400)) ?? 0
        }
        database.discard(drops)
        progress(String(format: "retire: partition drops: %d rows in %.2f s, WAL %.1f kB, claim p99 %.1f ms",
                        partitionDrops.retired, partitionDrops.seconds, Double(partitionDrops.walBytes) / 1e3,
                        partitionDrops.claimsDuring?.p99 ?? .nan))
        return HistoryRetirementResult(rows: rows, keyedEvery: keyedEvery, rowDeletes: rowDeletes,
                                       partitionDrops: partitionDrops, migrationSeconds: migrationSeconds,
                                       migrationWALBytes: migrationWAL)
    }

    /// Times `retire` (which returns the rows it retired) with the claimer running.
    static func measure(conninfo: String, payloadBytes: Int,
                        retire: (PostgresConnection) throws -> Int) throws -> RetirementResult {
        let connection = try PostgresConnection(conninfo: conninfo)
        let claimer = ClaimProbe(conninfo: conninfo, payloadBytes: payloadBytes)
        claimer.start()
        Thread.sleep(forTimeInterval: baselineSeconds)
        let baseline = claimer.take()
        let walBefore = try walPosition(connection)
        let started = ContinuousClock.now
        let retired: Int
        do {
            retired = try retire(connection)
        } catch {
            _ = try? claimer.stop()
            throw error
        }
        let elapsed = seconds(since: started)
        let walBytes = try walPosition(connection) - walBefore
        let during = try claimer.stop()
        return RetirementResult(retired: retired, seconds: elapsed, walBytes: walBytes,
                                claimsBefore: LatencySummary(milliseconds: baseline),
                                claimsDuring: LatencySummary(milliseconds: during))
    }

    static func walPosition(_ connection: PostgresConnection) throws -> Int64 {
        try connection.query("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint").int64(0, 0) ?? 0
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        Double((ContinuousClock.now - start) / .microseconds(1)) / 1e6
    }
}

/// A claimer on its own connection: inserts 10 due rows, claims them (timed), marks them
/// delivered, every 10 ms, until stopped.
final class ClaimProbe: Sendable {
    private let conninfo: String
    private let payloadBytes: Int
    private let state = Locked((stop: false, milliseconds: [Double](), failure: String?.none))
    private let finished = DispatchSemaphore(value: 0)

    init(conninfo: String, payloadBytes: Int) {
        self.conninfo = conninfo
        self.payloadBytes = payloadBytes
    }

    func start() {
        Thread.detachNewThread { [self] in
            defer { finished.signal() }
            do {
                let connection = try PostgresConnection(conninfo: conninfo)
                let queue = NotificationQueue(connection: connection, workerID: "bench-probe")
                // The row-delete run keeps the schema of 007, older than the claim statement of
                // this version: there it claims with a statement that schema knows.
                let legacy = try connection.query("SELECT to_regclass('pgpush.channels') IS NULL").bool(0, 0) == true
                var token = 2_000_000_000
                while !state.withLock({ $0.stop }) {
                    try BenchRows.fill(connection, count: 10, payloadBytes: payloadBytes, firstToken: token, analyze: false)
                    token += 10
                    let started = ContinuousClock.now
                    if legacy {
                        try connection.execute(script: """
                            UPDATE pgpush.notifications SET status = 'sending', locked_by = 'bench-probe',
                                   locked_until = now() + interval '60 seconds', attempts = attempts + 1,
                                   claim_count = claim_count + 1
                             WHERE id IN (SELECT id FROM pgpush.notifications
                                           WHERE status = 'queued' AND app = 'default' AND send_after <= now()
                                           ORDER BY send_after, id LIMIT 10 FOR UPDATE SKIP LOCKED)
                            """)
                    } else {
                        _ = try queue.claim(app: "default", limit: 10, lease: .seconds(60))
                    }
                    let elapsed = Double((ContinuousClock.now - started) / .microseconds(1)) / 1000
                    state.withLock { $0.milliseconds.append(elapsed) }
                    try connection.execute(script: """
                        UPDATE pgpush.notifications SET status = 'delivered', finished_at = now(), locked_by = NULL,
                               locked_until = NULL, last_status = 200 WHERE status = 'sending'
                        """)
                    Thread.sleep(forTimeInterval: 0.01)
                }
            } catch {
                state.withLock { $0.failure = "\(error)" }
            }
        }
    }

    /// The claim times so far, forgotten here.
    func take() -> [Double] {
        state.withLock { state in
            defer { state.milliseconds = [] }
            return state.milliseconds
        }
    }

    /// Stops the claimer; returns the claim times since the last `take`.
    func stop() throws -> [Double] {
        state.withLock { $0.stop = true }
        finished.wait()
        if let failure = state.withLock({ $0.failure }) { throw BenchError("claimer: \(failure)") }
        return take()
    }
}

package struct RetirementResult: Sendable, Codable, Equatable {
    package var retired: Int
    package var seconds: Double
    /// WAL written while retiring (by the claimer too, a few kB a second).
    package var walBytes: Int64
    /// The claimer's claim times just before and during the retirement, in milliseconds.
    package var claimsBefore: LatencySummary?
    package var claimsDuring: LatencySummary?
}

package struct HistoryRetirementResult: Sendable, Codable, Equatable {
    package var rows: Int
    package var keyedEvery: Int
    package var rowDeletes: RetirementResult
    package var partitionDrops: RetirementResult
    /// `pgpush migrate` of the filled 007 table to partitions.
    package var migrationSeconds: Double
    package var migrationWALBytes: Int64
}
