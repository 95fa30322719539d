import Foundation
import PGPushTestSupport
import Postgres
import PushQueue
import Testing

@Suite struct MigrationTests {
    @Test func migratesFromEmptyAndSecondRunChangesNothing() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        let runner = MigrationRunner(migrations: try Migration.load(directory: TestDatabase.sqlDirectory))
        let first = try runner.migrate(connection)
        #expect(first == runner.migrations.map(\.version))
        #expect(first.first == 1)
        let schemaBefore = try schemaFingerprint(connection)
        #expect(try runner.migrate(connection).isEmpty)
        #expect(try schemaFingerprint(connection) == schemaBefore)
        let versions = try connection.query("SELECT count(*) FROM pgpush.schema_migrations")
        #expect(versions.int(0, 0) == runner.migrations.count)
    }

    @Test func concurrentMigrationsApplyEachVersionOnce() async throws {
        let conninfo = try TestDatabase.empty()
        let migrations = try Migration.load(directory: TestDatabase.sqlDirectory)
        let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<4 {
                group.addTask {
                    let connection = try PostgresConnection(conninfo: conninfo)
                    return try MigrationRunner(migrations: migrations).migrate(connection)
                }
            }
            return try await group.reduce(into: [Int]()) { $0 += $1 }
        }
        #expect(applied.sorted() == migrations.map(\.version))
    }

    @Test func editedMigrationIsRefused() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        var migrations = try Migration.load(directory: TestDatabase.sqlDirectory)
        try MigrationRunner(migrations: migrations).migrate(connection)
        migrations[0] = Migration(version: migrations[0].version, name: migrations[0].name, sql: migrations[0].sql + "\n-- edited")
        let error = try #require(throws: MigrationError.self) { try MigrationRunner(migrations: migrations).migrate(connection) }
        #expect(error.description.contains("changed after it was applied"))
    }

    @Test func failingMigrationLeavesNothingBehind() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        let broken = [Migration(version: 1, name: "broken", sql: "CREATE TABLE pgpush.half (x int); SELECT 1/0;")]
        #expect(throws: MigrationError.self) { try MigrationRunner(migrations: broken).migrate(connection) }
        let table = try connection.query("SELECT to_regclass('pgpush.half') IS NULL")
        #expect(table.bool(0, 0) == true)
        #expect(try connection.query("SELECT count(*) FROM pgpush.schema_migrations").int(0, 0) == 0)
    }

    /// A database that 001-004 built and filled, with rows the new priority rules refuse,
    /// takes the later migrations: nothing is lost, the broken rules stay NOT VALID, the
    /// clean one is validated, and new rows are checked by all of them.
    @Test func migratesADatabaseOfEarlierVersionsWithRowsTheNewRulesRefuse() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        let all = try Migration.load(directory: TestDatabase.sqlDirectory)
        try MigrationRunner(migrations: all.filter { $0.version <= 4 }).migrate(connection)
        let token = BadInputTests.token
        try connection.query("""
            INSERT INTO pgpush.notifications (device_token, payload, push_type, priority, status, finished_at)
            VALUES ($1, '{"aps":{}}', 'pushtotalk', 5, 'delivered', now()),
                   ($1, '{"aps":{}}', 'liveactivity', 1, 'queued', NULL),
                   ($1, '{"aps":{}}', 'location', 10, 'queued', NULL)
            """, [token])
        try connection.query("INSERT INTO pgpush.app_health (app, healthy, reason) VALUES ('shop', false, 'BadTopic')")
        try connection.query("INSERT INTO pgpush.invalid_tokens (app, device_token, reason) VALUES ('shop', $1, 'Unregistered')", [token])
        // What an application ran before 005: a call naming only the old arguments.
        let enqueue = #"SELECT pgpush.enqueue(device_token => $1, payload => '{"aps":{}}', app => 'shop')"#
        try connection.query(enqueue, [token])

        let applied = try MigrationRunner(migrations: all).migrate(connection)
        #expect(applied == all.map(\.version).filter { $0 > 4 })
        #expect(try MigrationRunner(migrations: all).migrate(connection).isEmpty)

        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 4)
        // Since 012 the input rules are one constraint (notifications_input_rules), which holds
        // for rows waiting for their first claim: the queued live activity at priority 1 breaks
        // it, so it stays NOT VALID; the finished push-to-talk row is not checked.
        let rules = try connection.query("""
            SELECT conname, convalidated FROM pg_constraint
             WHERE conrelid = 'pgpush.notifications'::regclass AND conname = ANY($1)
            """, [["notifications_pushtotalk_priority_10_or_service_update_5", "notifications_liveactivity_priority_must_be_5_or_10",
                   "notifications_location_priority_must_be_5_or_10", "notifications_input_rules"]])
        let validated = Dictionary(uniqueKeysWithValues: (0..<rules.rowCount).map { (rules.string($0, 0) ?? "", rules.bool($0, 1)) })
        #expect(validated == ["notifications_input_rules": false])
        let refused = try #require(throws: PostgresError.self) {
            try connection.query("INSERT INTO pgpush.notifications (device_token, payload, push_type, priority) VALUES ($1, $2, 'liveactivity', 1)",
                                 [token, BadInputTests.liveActivityUpdate])
        }
        #expect(refused.constraint == "notifications_liveactivity_priority_must_be_5_or_10")

        let health = try connection.query("SELECT app, topic IS NULL, healthy, reason FROM pgpush.app_health")
        #expect(health.rowCount == 1)
        #expect(health.string(0, 0) == "shop" && health.bool(0, 1) == true && health.bool(0, 2) == false)
        #expect(health.string(0, 3) == "BadTopic")
        #expect(try connection.query(enqueue, [token]).int64(0, 0) != nil)
        let untouched = try connection.query("SELECT count(*) FROM pgpush.notifications WHERE deliver_once IS NULL AND apns_unique_id IS NULL")
        #expect(untouched.int(0, 0) == 5)
        #expect(try connection.query("SELECT pgpush.token_registered('shop', upper($1))", [token]).bool(0, 0) == true)
    }

    /// Rows that 001-005 accepted and 006 refuses: the migration keeps them, queue_depth no
    /// longer fails on them, and the claim takes them again. Before 006, queue_depth failed with
    /// "cannot subtract infinite timestamps" and the claim of app news with "cannot convert
    /// infinity to bigint"; with the rules but without the repair, every claim of an app with
    /// such a row failed on the rule (a NOT VALID rule still checks updates).
    @Test func migration006KeepsOldRowsTheNewRulesRefuseAndTheViewsSurviveThem() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        let all = try Migration.load(directory: TestDatabase.sqlDirectory)
        try MigrationRunner(migrations: all.filter { $0.version <= 5 }).migrate(connection)
        let token = BadInputTests.token
        try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => '{}', app => 'shop', send_after => '-infinity')", [token])
        try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => '{}', app => 'news', expires_at => 'infinity')", [token])
        try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => '{}', app => E'bad\nname')", [token])
        // Deep enough to need the exact depth count, shallow enough for 005's size check.
        try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => $2::jsonb, app => 'deep')",
                             [token, BadInputTests.nested(depth: 100)])

        #expect(try MigrationRunner(migrations: all).migrate(connection) == all.map(\.version).filter { $0 > 5 })
        let unvalidated = try connection.query("""
            SELECT conname FROM pg_constraint WHERE conrelid = 'pgpush.notifications'::regclass AND NOT convalidated ORDER BY 1
            """)
        // The infinite times were given their finite meaning, so those rules hold for every row;
        // the rows that cannot be sent ended failed (until 012 they kept two rules NOT VALID; the
        // input rules hold for rows waiting for their first claim, which they are not).
        #expect((0..<unvalidated.rowCount).compactMap { unvalidated.string($0, 0) } == [])
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 4)
        let failed = try connection.query("""
            SELECT n.app FROM pgpush.notifications n JOIN pgpush.delivery_errors e ON e.notification_id = n.id
             WHERE n.status = 'failed' AND n.last_reason = 'BrokeInputRules' AND e.reason = 'BrokeInputRules' ORDER BY 1
            """)
        #expect((0..<failed.rowCount).compactMap { failed.string($0, 0) } == ["bad\nname", "deep"])

        let depth = try connection.query("SELECT due, oldest_due_seconds >= 0 AND oldest_due_seconds < 3600 FROM pgpush.queue_depth WHERE app = 'shop'")
        #expect(depth.int(0, 0) == 1 && depth.bool(0, 1) == true)
        let queue = NotificationQueue(connection: connection, workerID: "w")
        let claimed = try queue.claim(app: "news", limit: 10, lease: .seconds(30)).claimed
        #expect(claimed.count == 1 && claimed.first?.notification.expiration == nil)

        // Run again by hand, 006 changes nothing and fails on nothing.
        let migration = try #require(all.first { $0.version == 6 })
        let before = try schemaFingerprint(connection)
        try connection.transaction { try connection.execute(script: migration.sql) }
        #expect(try schemaFingerprint(connection) == before)
    }

    /// Run again by hand, 007 fails on nothing and changes nothing, whether or not the roles
    /// of roles.sql exist (they belong to the cluster, so another test may have made them).
    @Test func migration007RunsAgainWithoutError() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        let all = try Migration.load(directory: TestDatabase.sqlDirectory)
        try MigrationRunner(migrations: all.filter { $0.version <= 7 }).migrate(connection)
        let migration = try #require(all.first { $0.version == 7 })
        let before = try schemaFingerprint(connection)
        try connection.transaction { try connection.execute(script: migration.sql) }
        try connection.transaction { try connection.execute(script: migration.sql) }
        #expect(try schemaFingerprint(connection) == before)
    }

    /// Run again by hand (the runner would skip it), 005 fails on nothing and changes nothing.
    @Test func migration005RunsAgainWithoutError() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        let all = try Migration.load(directory: TestDatabase.sqlDirectory)
        try MigrationRunner(migrations: all.filter { $0.version <= 5 }).migrate(connection)
        let migration = try #require(all.first { $0.version == 5 })
        let before = try schemaFingerprint(connection)
        try connection.transaction { try connection.execute(script: migration.sql) }
        try connection.transaction { try connection.execute(script: migration.sql) }
        #expect(try schemaFingerprint(connection) == before)
        let functions = try connection.query("""
            SELECT count(*) FROM pg_proc WHERE pronamespace = 'pgpush'::regnamespace
               AND proname IN ('enqueue', 'enqueue_many', 'token_registered')
            """)
        // enqueue, enqueue_many, token_registered: no second version of any.
        #expect(functions.int(0, 0) == 3)
    }

    /// Run again by hand on a database of its version, 015 fails on nothing and changes
    /// nothing (every function it replaces has one version afterwards).
    @Test func migration015RunsAgainWithoutError() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        let all = try Migration.load(directory: TestDatabase.sqlDirectory)
        try MigrationRunner(migrations: all.filter { $0.version <= 15 }).migrate(connection)
        let migration = try #require(all.first { $0.version == 15 })
        let before = try schemaFingerprint(connection)
        try connection.transaction { try connection.execute(script: migration.sql) }
        try connection.transaction { try connection.execute(script: migration.sql) }
        #expect(try schemaFingerprint(connection) == before)
        let functions = try connection.query("""
            SELECT count(*) FROM pg_proc WHERE pronamespace = 'pgpush'::regnamespace
               AND proname IN ('enqueue', 'enqueue_many', 'token_registered', 'notification_input_holds')
            """)
        // enqueue twice (device tokens, and channels or topics), enqueue_many, token_registered, the input rules.
        #expect(functions.int(0, 0) == 5)
    }

    /// Run again by hand on a database of its version, 017 fails on nothing and changes
    /// nothing: the claim it makes again keeps one version, the enqueue functions with
    /// `subscription` replace the ones without.
    @Test func migration017RunsAgainWithoutError() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        let all = try Migration.load(directory: TestDatabase.sqlDirectory)
        try MigrationRunner(migrations: all.filter { $0.version <= 17 }).migrate(connection)
        let migration = try #require(all.first { $0.version == 17 })
        let before = try schemaFingerprint(connection)
        try connection.transaction { try connection.execute(script: migration.sql) }
        try connection.transaction { try connection.execute(script: migration.sql) }
        #expect(try schemaFingerprint(connection) == before)
        let functions = try connection.query("""
            SELECT proname || '/' || pronargs FROM pg_proc WHERE pronamespace = 'pgpush'::regnamespace
               AND proname IN ('enqueue', 'enqueue_many', 'notification_input_holds', 'claim') ORDER BY 1
            """)
        #expect((0..<functions.rowCount).compactMap { functions.string($0, 0) } == [
            "claim/6", "claim/7", "claim/8", "enqueue/11", "enqueue/13", "enqueue_many/13", "notification_input_holds/13",
        ])
    }

    /// Run again by hand on a database of its version, 018 fails on nothing and changes
    /// nothing: the enqueue functions with `lane` replace the ones without, the claim keeps
    /// one version, the feed's trigger is one.
    @Test func migration018RunsAgainWithoutError() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        let all = try Migration.load(directory: TestDatabase.sqlDirectory)
        try MigrationRunner(migrations: all.filter { $0.version <= 18 }).migrate(connection)
        let migration = try #require(all.first { $0.version == 18 })
        let before = try schemaFingerprint(connection)
        try connection.transaction { try connection.execute(script: migration.sql) }
        try connection.transaction { try connection.execute(script: migration.sql) }
        #expect(try schemaFingerprint(connection) == before)
        let functions = try connection.query("""
            SELECT proname || '/' || pronargs FROM pg_proc WHERE pronamespace = 'pgpush'::regnamespace
               AND proname IN ('enqueue', 'enqueue_many', 'claim', 'requeue') ORDER BY 1
            """)
        #expect((0..<functions.rowCount).compactMap { functions.string($0, 0) } == [
            "claim/6", "claim/7", "claim/8", "enqueue/12", "enqueue/14", "enqueue_many/14", "requeue/1",
        ])
        let triggers = try connection.query("""
            SELECT count(*) FROM pg_trigger WHERE tgrelid = 'pgpush.invalid_tokens'::regclass AND NOT tgisinternal
            """)
        #expect(triggers.int(0, 0) == 1)
    }

    /// 019 makes the claim again with a lane column: run again by hand it changes nothing,
    /// and the worker role may still call the claim (the grants go with a dropped function).
    @Test func migration019RunsAgainAndKeepsTheWorkersGrant() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.applyRoles(connection)
        let migration = try #require(try Migration.load(directory: TestDatabase.sqlDirectory).first { $0.version == 19 })
        let before = try schemaFingerprint(connection)
        try connection.transaction { try connection.execute(script: migration.sql) }
        try connection.transaction { try connection.execute(script: migration.sql) }
        #expect(try schemaFingerprint(connection) == before)
        let signature = "pgpush.claim(text, text, text, integer, double precision, boolean, bigint, double precision)"
        #expect(try connection.query("SELECT has_function_privilege('pgpush_worker', $1, 'EXECUTE')", [signature]).bool(0, 0) == true)
        #expect(try connection.query("SELECT has_function_privilege('pgpush_app', $1, 'EXECUTE')", [signature]).bool(0, 0) == false)
        let columns = try connection.query("SELECT * FROM pgpush.claim('w', 'default', 'apns', 1, 30, true, 0, NULL)")
        #expect(columns.columnCount == 16 && columns.columnName(15) == "lane")
    }

    private func schemaFingerprint(_ connection: PostgresConnection) throws -> [String] {
        let result = try connection.query("""
            SELECT c.relkind::text || ':' || c.relname FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
             WHERE s.nspname = 'pgpush' ORDER BY 1
            """)
        return (0..<result.rowCount).compactMap { result.string($0, 0) }
    }
}

@Suite struct EnqueueTests {
    static let token = String(repeating: "cd", count: 32)

    @Test func idempotencyKeyNeverProducesASecondRow() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let sql = "SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{\"alert\":\"a\"}}', idempotency_key => $2, app => $3)"
        let first = try connection.query(sql, [Self.token, "order-42", "shop"]).int64(0, 0)
        let second = try connection.query(sql, [Self.token, "order-42", "shop"]).int64(0, 0)
        #expect(first != nil)
        #expect(first == second)
        // Same key for another app is another notification.
        let otherApp = try connection.query(sql, [Self.token, "order-42", "news"]).int64(0, 0)
        #expect(otherApp != first)
        // A plain INSERT with a used key is rejected.
        let error = try #require(throws: PostgresError.self) {
            try connection.query("""
                INSERT INTO pgpush.notifications (app, device_token, payload, idempotency_key)
                VALUES ('shop', $1, '{}', 'order-42')
                """, [Self.token])
        }
        #expect(error.sqlState == "23505")
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 2)
    }

    @Test func enqueueManyInsertsOneRowPerTokenAndHonoursKeys() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let tokens = (0..<50).map { String(format: "%064x", $0 + 1) }
        let sql = "SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{\"aps\":{\"alert\":\"x\"}}', push_type => 'alert', idempotency_key => 'campaign-7')"
        let ids = try connection.query(sql, [tokens])
        #expect(ids.rowCount == 50)
        let again = try connection.query(sql, [tokens + [String(format: "%064x", 999)]])
        #expect(again.rowCount == 1)
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 51)
    }

    @Test func insertWakesListenersOncePerStatementPerApp() throws {
        let conninfo = try TestDatabase.migrated()
        let listener = try PostgresConnection(conninfo: try TestDatabase.session(conninfo))
        let app = try PostgresConnection(conninfo: conninfo)
        try listener.listen("pgpush_queued")
        try app.query("""
            INSERT INTO pgpush.notifications (app, device_token, payload)
            SELECT CASE WHEN i % 2 = 0 THEN 'news' ELSE 'shop' END, $1, '{}' FROM generate_series(1, 100) AS i
            """, [Self.token])
        // Scheduled for later: no wake-up.
        try app.query("INSERT INTO pgpush.notifications (app, device_token, payload, send_after) VALUES ('later', $1, '{}', now() + interval '1 hour')", [Self.token])
        var received: [PostgresNotification] = []
        for _ in 0..<20 {
            received += try listener.waitForNotifications(timeout: .milliseconds(100))
            if received.count >= 2 { _ = try listener.waitForNotifications(timeout: .milliseconds(200)).map { received.append($0) }; break }
        }
        #expect(Set(received.map(\.payload)) == ["news", "shop"])
        #expect(received.count == 2)
    }
}
