import Foundation
import Postgres

/// What `pgpush requeue` puts back to `queued`: the failed and expired rows of one app,
/// narrowed by reason, finish time and service, through `pgpush.requeue` (which decides what
/// may be requeued, and by whom: sql/018_daily_operations.sql).
package struct RequeueRequest: Sendable, Equatable {
    package var app: String
    /// Only rows whose `last_reason` is this.
    package var reason: String?
    /// Only rows that finished at or after this.
    package var since: Date?
    package var service: String?

    package init(app: String, reason: String? = nil, since: Date? = nil, service: String? = nil) {
        self.app = app
        self.reason = reason
        self.since = since
        self.service = service
    }

    /// One batch: the next rows in id order above `$5`, handed to pgpush.requeue; returns the
    /// highest id looked at and how many were requeued.
    static let batchSQL = """
        WITH batch AS (
            SELECT n.id FROM pgpush.notifications n
             WHERE n.app = $1 AND n.status IN ('failed', 'expired') AND n.id > $5
               AND ($2::text IS NULL OR n.last_reason = $2)
               AND ($3::timestamptz IS NULL OR n.finished_at >= $3::timestamptz)
               AND ($4::text IS NULL OR n.service = $4)
             ORDER BY n.id
             LIMIT $6
        )
        SELECT (SELECT max(id) FROM batch),
               (SELECT count(*) FROM pgpush.requeue(ARRAY(SELECT id FROM batch)))
        """

    /// Requeues in batches of `batchSize` rows, each its own transaction (a million rows are
    /// never one long lock); returns how many rows were requeued. Rows the caller may see but
    /// not requeue are stepped over, not asked for again.
    package func requeue(on connection: PostgresConnection, batchSize: Int = 10_000) throws -> Int {
        let timestamps = ISO8601DateFormatter()
        timestamps.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var after = Int64.min
        var requeued = 0
        while true {
            let result = try connection.query(Self.batchSQL, [
                app, reason, since.map(timestamps.string(from:)), service, after, batchSize,
            ])
            guard let last = result.int64(0, 0) else { return requeued }
            requeued += result.int(0, 1) ?? 0
            after = last
        }
    }
}
