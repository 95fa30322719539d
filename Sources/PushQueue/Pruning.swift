import Postgres

extension NotificationQueue {
    /// Arbitrary but fixed: "pgpush" in ASCII, plus 2. Held by the one worker pruning now.
    static let pruneLockKey: Int64 = 0x7067_7075_7368_0002

    /// Deletes finished rows (and error rows) older than `olderThan`, in
    /// batches of short transactions; returns how many notifications went.
    /// When `onlyIfLeader`, returns nil without pruning if another process holds the prune lock.
    public func prune(olderThan: Duration, batchSize: Int = 5000, onlyIfLeader: Bool = false) throws -> Int? {
        if onlyIfLeader {
            let leader = try connection.query("SELECT pg_try_advisory_lock($1)", [Self.pruneLockKey])
            guard leader.bool(0, 0) == true else { return nil }
        }
        defer {
            if onlyIfLeader { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [Self.pruneLockKey]) }
        }
        var total = 0
        while true {
            let result = try connection.query("SELECT pgpush.prune(make_interval(secs => $1), $2)", [olderThan.seconds, batchSize])
            let deleted = result.int(0, 0) ?? 0
            total += deleted
            if deleted < batchSize { return total }
        }
    }
}
