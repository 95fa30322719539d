import Postgres

extension NotificationQueue {
    /// Arbitrary but fixed: "pgpush" in ASCII, plus 2. Held by the one worker pruning now.
    static let pruneLockKey: Int64 = 0x7067_7075_7368_0002

    /// Deletes finished rows (and error rows) older than `olderThan`, in
    /// batches of short transactions; returns how many notifications went.
    /// When `onlyIfLeader`, returns nil without pruning if another process is pruning now.
    ///
    /// The leader's lock is transaction-level, taken again for each batch: through a
    /// transaction pooler a session lock would stay on whichever server connection took
    /// it, held long after this process stopped.
    public func prune(olderThan: Duration, batchSize: Int = 5000, onlyIfLeader: Bool = false) throws -> Int? {
        var total = 0
        while true {
            let deleted: Int? = try connection.transaction {
                if onlyIfLeader {
                    let leader = try connection.query("SELECT pg_try_advisory_xact_lock($1)", [Self.pruneLockKey])
                    guard leader.bool(0, 0) == true else { return nil }
                }
                let result = try connection.query("SELECT pgpush.prune(make_interval(secs => $1), $2)",
                                                  [olderThan.seconds, batchSize])
                return result.int(0, 0) ?? 0
            }
            // Another worker holds the lock: it prunes; this one stops (it was leader for
            // the batches before, if any, and those are done).
            guard let deleted else { return total == 0 ? nil : total }
            total += deleted
            if deleted < batchSize { return total }
        }
    }
}
