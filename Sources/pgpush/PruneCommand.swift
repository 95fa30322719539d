import Postgres
import PushQueue

enum PruneCommand {
    static let help = """
        pgpush prune — delete finished notifications and old error rows

        Deletes rows that finished (delivered, failed, expired, cancelled) longer ago than the
        retention, and delivery_errors rows older than it, in batches of short transactions so
        that no lock is held for long; safe while workers run. Queued and in-flight rows are
        never touched. Workers can do the same periodically: set PGPUSH_PRUNE_AFTER_DAYS.

        Flags:
          --older-than-days N   retention in days (required)
          --batch-size N        rows per transaction (default 5000)
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
        let deleted = try queue.prune(olderThan: .milliseconds(Int64(days * 86_400_000)), batchSize: batchSize) ?? 0
        print("deleted \(deleted) finished notification(s) older than \(text) day(s)")
        return 0
    }
}
