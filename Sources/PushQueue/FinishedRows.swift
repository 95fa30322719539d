import Postgres

/// Rows that finished in the database by paths other than this worker's outcomes:
/// `pgpush.cancel` (status `cancelled`) and other workers' claims (`expired`).
package struct FinishedRows: Sendable, Equatable {
    /// The database time counted up to, as PostgreSQL wrote it: the next call's `since`.
    package var upTo: String
    /// Per app, per status (`expired`, `cancelled`): rows finished in the window.
    package var counts: [String: [String: Int]]
}

extension NotificationQueue {
    /// How far behind the database's clock the window ends. `finished_at` is set at the
    /// start of the finishing transaction, so a row becomes visible only at its commit;
    /// stopping short of now lets those commits land before their rows are counted.
    package static let finishedRowsLag = "5 seconds"

    /// Rows of `apps` that finished as `expired` or `cancelled` with `since <= finished_at
    /// < upTo`. With `since` nil it counts nothing and only returns where to start, so a
    /// worker counts what happens from its start, not the table's history. The range is
    /// read through the `finished_at` index, so the cost follows the rows finished in
    /// one window, not the table.
    package func finishedRows(apps: [String], since: String?) throws -> FinishedRows {
        let bound = try connection.query("SELECT (now() - $1::interval)::text", [Self.finishedRowsLag])
        let upTo = bound.string(0, 0) ?? ""
        guard let since else { return FinishedRows(upTo: upTo, counts: [:]) }
        let result = try connection.query("""
            SELECT app, status, count(*) FROM pgpush.notifications
             WHERE finished_at >= $1::timestamptz AND finished_at < $2::timestamptz
               AND status IN ('expired', 'cancelled') AND app = ANY($3::text[])
             GROUP BY app, status
            """, [since, upTo, apps])
        var counts: [String: [String: Int]] = [:]
        for row in 0..<result.rowCount {
            guard let app = result.string(row, 0), let status = result.string(row, 1) else { continue }
            counts[app, default: [:]][status] = result.int(row, 2) ?? 0
        }
        return FinishedRows(upTo: upTo, counts: counts)
    }
}
