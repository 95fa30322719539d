import Postgres
import PushQueue

enum PruneCommand {
    static let help = """
        pgpush prune — retire finished notifications and their error rows past a retention

        History is kept in partitions of notification ids (pgpush.history_partitions lists
        them). A partition whose rows are all final (delivered, failed, expired, cancelled) and
        finished longer ago than the retention is dropped whole, with the error rows of the same
        ids: no row deletes, no vacuum. Rows that went to the default partition (while no
        partition was ready) are deleted in batches of short transactions. A partition holding
        a queued or in-flight row is kept, so rows may outlive the retention by the time their
        partition takes to fill. Also creates the partitions ahead. Safe while workers run.
        Workers do the same every 10 minutes: set PGPUSH_PRUNE_AFTER_DAYS.

        Flags:
          --older-than-days N   retention in days (required)
          --batch-size N        rows of the default partition per transaction (default 5000)
          --database-url URL    libpq connection string or URI (default: $DATABASE_URL, then PG* variables)

        Examples:
          pgpush prune --older-than-days 30
          DATABASE_URL=postgres://pgpush@db/app pgpush prune --older-than-days 7 --batch-size 1000
        """

    static let flags: Set<String> = ["help", "older-than-days", "batch-size", "database-url"]

    static func run(_ arguments: Arguments) throws -> Int32 {
        guard let text = arguments.value("older-than-days") else { throw UsageError("--older-than-days is required") }
        guard let days = Double(text), days >= 0 else { throw UsageError("--older-than-days must be a number ≥ 0, got \(text)") }
        let batchSize = try arguments.value("batch-size").map { text throws(UsageError) in
            guard let size = Int(text), size > 0 else { throw UsageError("--batch-size must be a whole number > 0, got \(text)") }
            return size
        } ?? 5000
        let connection = try PostgresConnection(conninfo: try arguments.databaseURL())
        let queue = NotificationQueue(connection: connection, workerID: "pgpush-prune")
        let created = try queue.createHistoryPartitions() ?? 0
        let retired = try queue.prune(olderThan: .milliseconds(Int64(days * 86_400_000)), batchSize: batchSize) ?? 0
        print("retired \(retired) finished notification(s) older than \(text) day(s); \(created) partition(s) created ahead")
        return 0
    }
}
