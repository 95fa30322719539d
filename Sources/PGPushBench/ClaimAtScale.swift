import Foundation
import Postgres
import PushQueue

/// The claim query against a table full of history: the same claims timed with
/// no finished rows and again after `finishedRows` finished rows were added, and the plan
/// PostgreSQL picks. The claim reads the partial index of queued rows only, so finished
/// rows should cost it nothing.
package enum ClaimAtScale {
    static let claimBatch = 1000
    static let claimsTimed = 20

    package static func run(conninfo: String, finishedRows: Int, payloadBytes: Int,
                           progress: @escaping @Sendable (String) -> Void) throws -> ClaimAtScaleResult {
        let connection = try PostgresConnection(conninfo: conninfo)
        let queue = NotificationQueue(connection: connection, workerID: "bench-claim")
        var nextToken = 1

        /// Fills a fresh backlog, times `claimsTimed` claims of `claimBatch` rows, then marks
        /// the claimed rows delivered so they join the history.
        func timeClaims() throws -> [Double] {
            try BenchRows.fill(connection, count: claimBatch * claimsTimed, payloadBytes: payloadBytes, firstToken: nextToken)
            nextToken += claimBatch * claimsTimed
            var milliseconds: [Double] = []
            for _ in 0..<claimsTimed {
                let started = ContinuousClock.now
                let result = try queue.claim(app: "default", limit: claimBatch, lease: .seconds(60))
                milliseconds.append(Double((ContinuousClock.now - started) / .microseconds(1)) / 1000)
                guard result.claimed.count == claimBatch else {
                    throw BenchError("claim at scale: claimed \(result.claimed.count) rows, expected \(claimBatch)")
                }
            }
            try connection.execute(script: """
                UPDATE pgpush.notifications SET status = 'delivered', finished_at = now(), locked_by = NULL,
                       locked_until = NULL, last_status = 200 WHERE status = 'sending'
                """)
            return milliseconds
        }

        progress("claim at scale: \(claimsTimed) claims of \(claimBatch) rows with no finished rows")
        let before = try timeClaims()
        try addFinishedRows(connection, count: finishedRows, firstToken: nextToken, payloadBytes: payloadBytes, progress: progress)
        nextToken += finishedRows
        progress("claim at scale: \(claimsTimed) claims of \(claimBatch) rows with \(finishedRows) finished rows")
        let after = try timeClaims()

        // One more claim under EXPLAIN ANALYZE (it claims for real, like the timed ones).
        try BenchRows.fill(connection, count: claimBatch, payloadBytes: payloadBytes, firstToken: nextToken)
        let plan = try queue.explainClaim(app: "default", limit: claimBatch, lease: .seconds(60))
            .flatMap { $0.split(separator: "\n").map(String.init) }
        let tableBytes = try connection.query("""
            SELECT sum(pg_total_relation_size(relid))::bigint FROM pg_partition_tree('pgpush.notifications')
            """).int64(0, 0) ?? 0
        return ClaimAtScaleResult(
            finishedRows: finishedRows, claimBatch: claimBatch, claimsTimed: claimsTimed,
            withoutHistory: LatencySummary(milliseconds: before), withHistory: LatencySummary(milliseconds: after),
            tableBytes: tableBytes, plan: plan)
    }

    /// `count` rows already delivered, as months of traffic would leave them, in batches of
    /// one statement each, into partitions made ahead of it (one row in `keyedEvery` with an
    /// idempotency key); then VACUUM ANALYZE, as autovacuum would have done by then.
    static func addFinishedRows(_ connection: PostgresConnection, count: Int, firstToken: Int, payloadBytes: Int,
                                keyedEvery: Int = 0, label: String = "claim at scale",
                                progress: @escaping @Sendable (String) -> Void) throws {
        let batch = 1_000_000
        var done = 0
        // Partitions ahead of each batch, as the workers' leader keeps them (schema 9 on).
        let partitioned = try connection.query("SELECT to_regprocedure('pgpush.create_history_partitions()') IS NOT NULL")
            .bool(0, 0) == true
        while done < count {
            let size = min(batch, count - done)
            if partitioned { try connection.query("SELECT pgpush.create_history_partitions()") }
            try connection.query("""
                INSERT INTO pgpush.notifications (device_token, payload, status, attempts, claim_count, last_status,
                                                  created_at, updated_at, finished_at, idempotency_key)
                SELECT lpad(to_hex(g), 64, '0'), $1::jsonb, 'delivered', 1, 1, 200,
                       now() - interval '30 days', now() - interval '30 days', now() - interval '30 days',
                       CASE WHEN $4 > 0 AND g % $4 = 0 THEN 'order-' || g END
                  FROM generate_series($2::bigint, $3::bigint) AS g
                """, [BenchRows.payload(bytes: payloadBytes), firstToken + done, firstToken + done + size - 1, keyedEvery])
            done += size
            progress("\(label): \(done) of \(count) finished rows inserted")
        }
        progress("\(label): VACUUM ANALYZE")
        try connection.execute(script: "VACUUM (ANALYZE) pgpush.notifications")
    }
}

package struct ClaimAtScaleResult: Sendable, Codable, Equatable {
    package var finishedRows: Int
    package var claimBatch: Int
    package var claimsTimed: Int
    /// Claim time in milliseconds, with no finished rows and with `finishedRows` of them.
    package var withoutHistory: LatencySummary?
    package var withHistory: LatencySummary?
    /// The table with its indexes and TOAST, at the end.
    package var tableBytes: Int64
    /// `EXPLAIN (ANALYZE, BUFFERS)` of one claim with the history in place.
    package var plan: [String]

    /// Whether the plan finds due rows through the partial index of queued rows.
    package var usesQueuedIndex: Bool { plan.contains { $0.contains("notifications_queued_due") } }
}
