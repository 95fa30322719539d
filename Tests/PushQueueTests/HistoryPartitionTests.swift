import Foundation
import PGPushTestSupport
import Postgres
import PushQueue
import Testing

/// History in partitions of notification ids (sql/009_history_partitions.sql): prune drops
/// whole partitions once their rows are final and old enough, partitions are kept ready
/// ahead, and an older table converts in place.
@Suite struct HistoryPartitionTests {
    static let token = String(repeating: "5e", count: 32)
    static let week: Duration = .seconds(7 * 86_400)

    static func ids(_ connection: PostgresConnection, _ sql: String) throws -> [Int64] {
        let result = try connection.query(sql)
        return (0..<result.rowCount).compactMap { result.int64($0, 0) }
    }

    static func firstIDs(_ connection: PostgresConnection) throws -> [Int64] {
        try ids(connection, """
            SELECT first_id FROM pgpush.history_partitions
             WHERE table_name = 'notifications' AND NOT is_default ORDER BY first_id
            """)
    }

    @Test func pruneDropsRetiredPartitionsWithTheirErrorsAndKeysAndKeepsTheOthers() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        try TestDatabase.cutHistory(connection, span: 10, ahead: 5)
        #expect(try Self.firstIDs(connection) == [1, 11, 21, 31, 41])
        // 1-29 delivered 10 days ago (every 5th with a key), 30 queued: [1, 11) and [11, 21)
        // are retired, [21, 31) still holds an unfinished row.
        try connection.query("""
            INSERT INTO pgpush.notifications (device_token, payload, status, finished_at, idempotency_key)
            SELECT $1, '{}', 'delivered', now() - interval '10 days', CASE WHEN i % 5 = 0 THEN 'k' || i END
              FROM generate_series(1, 29) AS i
            """, [Self.token])
        try connection.query("INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, '{}')", [Self.token])
        // 31-40 finished an hour ago: too recent. 41 queued.
        try connection.query("""
            INSERT INTO pgpush.notifications (device_token, payload, status, finished_at)
            SELECT $1, '{}', 'failed', now() - interval '1 hour' FROM generate_series(1, 10)
            """, [Self.token])
        try connection.query("INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, '{}')", [Self.token])
        try connection.query("""
            INSERT INTO pgpush.delivery_errors (notification_id, app, device_token, attempt, reason)
            VALUES (5, 'default', $1, 1, 'BadDeviceToken'), (25, 'default', $1, 1, 'BadDeviceToken')
            """, [Self.token])

        let queue = NotificationQueue(connection: connection, workerID: "pruner")
        #expect(try queue.prune(olderThan: Self.week) == 20)
        #expect(try Self.ids(connection, "SELECT id FROM pgpush.notifications ORDER BY id") == Array(21...41))
        #expect(try Self.ids(connection, "SELECT notification_id FROM pgpush.delivery_errors") == [25])
        #expect(try Self.firstIDs(connection) == [21, 31, 41])
        #expect(try queue.prune(olderThan: Self.week) == 0)

        // The keys of dropped rows went with them; the others still hold.
        let enqueue = "SELECT pgpush.enqueue(device_token => $1, payload => '{}', idempotency_key => $2)"
        #expect(try connection.query(enqueue, [Self.token, "k25"]).int64(0, 0) == 25)
        let reused = try #require(try connection.query(enqueue, [Self.token, "k5"]).int64(0, 0))
        #expect(reused > 41)
        // New rows land in the partitions ahead, never in the default one.
        let partition = try connection.query("""
            SELECT c.relname::text FROM pgpush.notifications n JOIN pg_class c ON c.oid = n.tableoid WHERE n.id = $1
            """, [reused])
        #expect(partition.string(0, 0) == "notifications_41")
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications_default").int(0, 0) == 0)
    }

    @Test func partitionsAheadAreCreatedAboveRowsTheDefaultTookWhichPruneDeletesRowByRow() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        try TestDatabase.cutHistory(connection, span: 5, ahead: 2)
        // 12 rows for 10 ids of partitions: 11 and 12 go to the default partition.
        try connection.query("""
            INSERT INTO pgpush.notifications (device_token, payload, status, finished_at)
            SELECT $1, '{}', 'delivered', now() - interval '10 days' FROM generate_series(1, 12)
            """, [Self.token])
        #expect(try Self.ids(connection, "SELECT id FROM pgpush.notifications_default ORDER BY id") == [11, 12])

        let queue = NotificationQueue(connection: connection, workerID: "pruner")
        #expect(try queue.createHistoryPartitions() == 2)
        #expect(try Self.firstIDs(connection) == [1, 6, 13, 18])
        try connection.query("INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, '{}')", [Self.token])
        let newest = try connection.query("""
            SELECT c.relname::text FROM pgpush.notifications n JOIN pg_class c ON c.oid = n.tableoid WHERE n.status = 'queued'
            """)
        #expect(newest.string(0, 0) == "notifications_13")

        // Two partitions dropped (10 rows), then the default's two rows deleted in batches of one.
        #expect(try queue.prune(olderThan: Self.week, batchSize: 1) == 12)
        #expect(try Self.ids(connection, "SELECT id FROM pgpush.notifications") == [13])
        // Ten ids stay ready above the next one (14): one more partition, then none.
        #expect(try queue.createHistoryPartitions() == 1)
        #expect(try queue.createHistoryPartitions() == 0)
    }

    /// Claims name the lowest id that can be queued, so their plan leaves out the partitions
    /// of finished history; rows the default partition took below the newest partitions count.
    @Test func claimsLeaveOutPartitionsBelowTheLowestUnfinishedRow() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        try TestDatabase.cutHistory(connection, span: 10, ahead: 2)
        try connection.query("""
            INSERT INTO pgpush.notifications (device_token, payload, status, finished_at)
            SELECT $1, '{}', 'delivered', now() FROM generate_series(1, 20)
            """, [Self.token])
        // 21-25 queued, in the default partition (no partition was ready for them).
        try connection.query("INSERT INTO pgpush.notifications (device_token, payload) SELECT $1, '{}' FROM generate_series(1, 5)",
                             [Self.token])
        let queue = NotificationQueue(connection: connection, workerID: "w")
        #expect(try queue.createHistoryPartitions() == 2)
        #expect(try queue.claimFrom() == 21)
        // The claim's plans are kept and generic: the partitions below the mark are left out
        // when each statement starts, so the plans as they ran scan none of them (an UPDATE
        // still lists every partition as a possible target).
        let plan = Self.scans(try queue.explainClaim(app: "default", limit: 10, lease: .seconds(30)))
        #expect(!plan.contains(" on notifications_1 ") && !plan.contains(" on notifications_11 "), "\(plan)")
        // Nor any partition above the newest id (26 onwards, kept ready ahead); the default
        // partition holds rows in the bounds that no other partition covers, and is read.
        #expect(plan.contains(" on notifications_default ") && !plan.contains(" on notifications_26 "), "\(plan)")
        #expect(try connection.query("SELECT array_agg(id ORDER BY id) FROM pgpush.notifications WHERE status = 'sending'")
                    .string(0, 0) == "{21,22,23,24,25}")

        // Being sent is not final: the mark stays until the rows are.
        #expect(try queue.createHistoryPartitions() == 0)
        let mark = "SELECT claim_from_id FROM pgpush.history_partitioning"
        #expect(try connection.query(mark).int64(0, 0) == 21)
        try connection.query("UPDATE pgpush.notifications SET status = 'delivered', finished_at = now(), locked_by = NULL, locked_until = NULL")
        #expect(try queue.createHistoryPartitions() == 0)
        #expect(try connection.query(mark).int64(0, 0) == 26)
    }

    /// The lines of `plans` that scan a table or index.
    static func scans(_ plans: [String]) -> String {
        plans.flatMap { $0.split(separator: "\n") }.filter { $0.contains("Scan") }.joined(separator: "\n")
    }

    /// In the common case (every id in a partition, empty ones kept ready ahead) the claim
    /// and the outcome read the one partition that holds their rows: not the partitions
    /// ahead, not the default partition (sql/014_bounded_partitions.sql).
    @Test func claimsAndOutcomesReadOnlyThePartitionsHoldingTheirRows() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        try TestDatabase.cutHistory(connection, span: 10, ahead: 3)
        #expect(try Self.firstIDs(connection) == [1, 11, 21])
        let insert = "INSERT INTO pgpush.notifications (device_token, payload) SELECT $1, '{}' FROM generate_series(1, $2::int)"
        try connection.query(insert, [Self.token, 10])
        let queue = NotificationQueue(connection: connection, workerID: "w")
        #expect(try queue.createHistoryPartitions() == 1)
        #expect(try queue.claimFrom() == 1)

        var claimed: [ClaimedNotification] = []
        let claim = Self.scans(try queue.explained {
            claimed = try queue.claim(app: "default", limit: 10, lease: .seconds(30)).claimed
        })
        #expect(claimed.map(\.id) == Array(1...10))
        #expect(claim.contains(" on notifications_1 "), "\(claim)")
        for unused in ["notifications_11", "notifications_21", "notifications_31", "notifications_default"] {
            #expect(!claim.contains(" on \(unused) "), "\(unused) in\n\(claim)")
        }

        let outcomes = claimed.map(Outcome.delivered)
        var written: Set<Int64> = []
        let outcome = Self.scans(try queue.explained { written = try queue.complete(outcomes) })
        #expect(written == Set(1...10))
        #expect(outcome.contains(" on notifications_1 "), "\(outcome)")
        for unused in ["notifications_11", "notifications_21", "notifications_31", "notifications_default"] {
            #expect(!outcome.contains(" on \(unused) "), "\(unused) in\n\(outcome)")
        }
        // Rows 11 and 12 are in the next partition: the claim reads it, and still none ahead.
        try connection.query(insert, [Self.token, 2])
        let next = Self.scans(try queue.explainClaim(app: "default", limit: 10, lease: .seconds(30)))
        #expect(next.contains(" on notifications_11 ") && !next.contains(" on notifications_21 "), "\(next)")
    }

    /// One process at a time prunes and creates partitions; its lock is transaction-level,
    /// so nothing stays locked after it (through a pooler a session lock would).
    @Test func onlyTheLeaderPrunesAndCreatesAndItsLockEndsWithItsTransaction() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        let queue = NotificationQueue(connection: connection, workerID: "pruner")
        let other = try PostgresConnection(conninfo: conninfo)
        try other.transaction {
            try other.query("SELECT pg_advisory_xact_lock($1)", [Int64(0x7067_7075_7368_0002)])
            #expect(try queue.prune(olderThan: .zero, onlyIfLeader: true) == nil)
            #expect(try queue.createHistoryPartitions(onlyIfLeader: true) == nil)
        }
        #expect(try queue.prune(olderThan: .zero, onlyIfLeader: true) == 0)
        #expect(try queue.createHistoryPartitions(onlyIfLeader: true) == 0)
        let held = try other.query("""
            SELECT count(*) FROM pg_locks
             WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """)
        #expect(held.int(0, 0) == 0)
    }

    /// A table that 001-007 built and filled converts in place: same rows and ids, same
    /// rules, row-level security and keys, and the old rows are claimed as before.
    @Test func migrationConvertsAFilledTableOfVersion7() throws {
        let conninfo = try TestDatabase.empty()
        let owner = try PostgresConnection(conninfo: conninfo)
        let all = try Migration.load(directory: TestDatabase.sqlDirectory)
        try MigrationRunner(migrations: all.filter { $0.version <= 7 }).migrate(owner)
        try TestDatabase.applyRoles(owner)
        try owner.query("""
            INSERT INTO pgpush.notifications (app, device_token, payload, status, finished_at, idempotency_key)
            VALUES ('shop', $1, '{}', 'delivered', now() - interval '10 days', 'order-1'),
                   ('shop', $1, '{}', 'queued', NULL, 'order-2'),
                   ('news', $1, '{}', 'queued', NULL, 'order-1')
            """, [Self.token])
        try owner.query("""
            INSERT INTO pgpush.delivery_errors (notification_id, app, device_token, attempt, reason)
            SELECT id, app, device_token, 1, 'BadDeviceToken' FROM pgpush.notifications WHERE status = 'delivered'
            """)
        let rowsSQL = "SELECT id || ':' || app || ':' || status || ':' || idempotency_key FROM pgpush.notifications ORDER BY id"
        let rulesSQL = """
            SELECT conname || ':' || convalidated FROM pg_constraint
             WHERE conrelid = 'pgpush.notifications'::regclass AND contype = 'c' ORDER BY conname
            """
        func strings(_ sql: String) throws -> [String] {
            let result = try owner.query(sql)
            return (0..<result.rowCount).compactMap { result.string($0, 0) }
        }
        let rowsBefore = try strings(rowsSQL), rulesBefore = try strings(rulesSQL)
        // Storage parameters the table had (008 sets its fillfactor) go to every partition.
        try MigrationRunner(migrations: all.filter { $0.version <= 9 }).migrate(owner)
        #expect(try owner.query("SELECT relkind::text FROM pg_class WHERE oid = 'pgpush.notifications'::regclass").string(0, 0) == "p")
        #expect(try strings(rowsSQL) == rowsBefore)
        #expect(try strings(rulesSQL) == rulesBefore)
        #expect(try owner.query("SELECT count(*) FROM pgpush.delivery_errors").int(0, 0) == 1)
        try owner.execute(script: "UPDATE pgpush.history_partitioning SET partitions_ahead = 3")
        #expect(try owner.query("SELECT pgpush.create_history_partitions()").int(0, 0) == 1)
        let withoutFillfactor = try owner.query("""
            SELECT count(*) FROM pgpush.history_partitions p JOIN pg_class c ON c.oid = p.partition
             WHERE p.table_name = 'notifications' AND NOT coalesce(c.reloptions @> '{fillfactor=90}', false)
            """)
        #expect(withoutFillfactor.int(0, 0) == 0)
        // The later migrations apply to the converted table like to a fresh one.
        try MigrationRunner(migrations: all).migrate(owner)
        let refused = try #require(throws: PostgresError.self) {
            try owner.query("INSERT INTO pgpush.notifications (device_token, payload, priority) VALUES ($1, '{}', 7)", [Self.token])
        }
        #expect(refused.constraint == "notifications_priority_not_1_5_10")

        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let app = try PostgresConnection(conninfo: TestDatabase.login(owner, conninfo: conninfo, role: "hist_app_\(suffix)",
                                                                      group: "pgpush_app", apps: ["shop"]))
        #expect(try app.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 2)
        for table in ["notifications_0", "notifications_default", "idempotency_keys", "delivery_errors_0"] {
            let denied = try #require(throws: PostgresError.self) { try app.query("SELECT count(*) FROM pgpush.\(table)") }
            #expect(denied.sqlState == "42501", "\(table)")
        }
        let queued = try #require(try owner.query(
            "SELECT id FROM pgpush.notifications WHERE app = 'shop' AND idempotency_key = 'order-2'").int64(0, 0))
        let repeated = try app.query("SELECT pgpush.enqueue(device_token => $1, payload => '{}', app => 'shop', idempotency_key => 'order-2')",
                                     [Self.token])
        #expect(repeated.int64(0, 0) == queued)
        let duplicate = try #require(throws: PostgresError.self) {
            try app.query("INSERT INTO pgpush.notifications (app, device_token, payload, idempotency_key) VALUES ('shop', $1, '{}', 'order-1')",
                          [Self.token])
        }
        #expect(duplicate.sqlState == "23505" && duplicate.constraint == "notifications_idempotency")
        // Another app's key: refused by row-level security, never by the key (which would tell it is used).
        let otherApp = try #require(throws: PostgresError.self) {
            try app.query("INSERT INTO pgpush.notifications (app, device_token, payload, idempotency_key) VALUES ('news', $1, '{}', 'order-1')",
                          [Self.token])
        }
        #expect(otherApp.sqlState == "42501")

        let worker = try PostgresConnection(conninfo: TestDatabase.login(owner, conninfo: conninfo, role: "hist_worker_\(suffix)",
                                                                         group: "pgpush_worker"))
        let claimed = try NotificationQueue(connection: worker, workerID: "w").claim(app: "shop", limit: 10, lease: .seconds(30))
        #expect(claimed.claimed.map(\.id) == [queued])
        // The old table is a partition like the others: it goes once its rows are final and old.
        try owner.query("UPDATE pgpush.notifications SET status = 'cancelled', finished_at = now() - interval '10 days', locked_by = NULL, locked_until = NULL")
        #expect(try NotificationQueue(connection: worker, workerID: "w").prune(olderThan: Self.week) == 3)
        #expect(try owner.query("SELECT count(*) FROM pgpush.idempotency_keys").int(0, 0) == 0)
    }
}
