import Postgres

extension NotificationQueue {
    /// Arbitrary but fixed: "pgpush" in ASCII, plus 2. Held by the one worker pruning (and
    /// creating history partitions ahead) now.
    static let pruneLockKey: Int64 = 0x7067_7075_7368_0002

    /// Retires history finished longer ago than `olderThan`: drops each partition whose rows
    /// are all final and old enough (with its error rows), and deletes old finished rows of
    /// the default partition in batches of `batchSize`; one short transaction per step (see
    /// pgpush.prune). Returns how many notifications went. When `onlyIfLeader`, returns nil
    /// without pruning if another process is pruning now.
    ///
    /// The leader's lock is transaction-level, taken again for each step: through a
    /// transaction pooler a session lock would stay on whichever server connection took
    /// it, held long after this process stopped.
    package func prune(olderThan: Duration, batchSize: Int = 5000, onlyIfLeader: Bool = false) throws -> Int? {
        var total = 0
        while true {
            let step: Int?? = try asLeader(onlyIfLeader) {
                try connection.query("SELECT pgpush.prune(make_interval(secs => $1), $2)", [olderThan.seconds, batchSize])
                    .int(0, 0)
            }
            // Another worker holds the lock: it prunes; this one stops (it was leader for
            // the steps before, if any, and those are done).
            guard let step else { return total == 0 ? nil : total }
            guard let retired = step else { return total }
            total += retired
        }
    }

    /// Keeps partitions of notifications and delivery_errors ready ahead of the newest id
    /// (pgpush.create_history_partitions); returns how many it created, or nil when
    /// `onlyIfLeader` and another process holds the prune lock now.
    package func createHistoryPartitions(onlyIfLeader: Bool = false) throws -> Int? {
        try asLeader(onlyIfLeader) {
            try connection.query("SELECT pgpush.create_history_partitions()").int(0, 0) ?? 0
        }
    }

    /// `body` in one transaction, holding the prune lock for that transaction when
    /// `onlyIfLeader`; nil when another process holds it.
    private func asLeader<T>(_ onlyIfLeader: Bool, _ body: () throws -> T) throws -> T? {
        try connection.transaction {
            if onlyIfLeader {
                let leader = try connection.query("SELECT pg_try_advisory_xact_lock($1)", [Self.pruneLockKey])
                guard leader.bool(0, 0) == true else { return nil }
            }
            return try body()
        }
    }
}
