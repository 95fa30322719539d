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
        let rules = try connection.query("""
            SELECT conname, convalidated FROM pg_constraint
             WHERE conrelid = 'pgpush.notifications'::regclass AND conname = ANY($1)
            """, [["notifications_pushtotalk_priority_10_or_service_update_5", "notifications_liveactivity_priority_must_be_5_or_10",
                   "notifications_location_priority_must_be_5_or_10"]])
        let validated = Dictionary(uniqueKeysWithValues: (0..<rules.rowCount).map { (rules.string($0, 0) ?? "", rules.bool($0, 1)) })
        #expect(validated == ["notifications_pushtotalk_priority_10_or_service_update_5": false,
                              "notifications_liveactivity_priority_must_be_5_or_10": false,
                              "notifications_location_priority_must_be_5_or_10": true])
        let refused = try #require(throws: PostgresError.self) {
            try connection.query("INSERT INTO pgpush.notifications (device_token, payload, push_type, priority) VALUES ($1, '{}', 'liveactivity', 1)",
                                 [token])
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
        // the rows that cannot be sent ended failed and keep the other two rules NOT VALID.
        #expect((0..<unvalidated.rowCount).compactMap { unvalidated.string($0, 0) } == [
            "notifications_app_name_1_to_64_letters_digits_dot_dash", "notifications_payload_nested_deeper_than_64",
        ])
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
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let migration = try #require(try Migration.load(directory: TestDatabase.sqlDirectory).first { $0.version == 7 })
        let before = try schemaFingerprint(connection)
        try connection.transaction { try connection.execute(script: migration.sql) }
        try connection.transaction { try connection.execute(script: migration.sql) }
        #expect(try schemaFingerprint(connection) == before)
    }

    /// Run again by hand (the runner would skip it), 005 fails on nothing and changes nothing.
    @Test func migration005RunsAgainWithoutError() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let migration = try #require(try Migration.load(directory: TestDatabase.sqlDirectory).first { $0.version == 5 })
        let before = try schemaFingerprint(connection)
        try connection.transaction { try connection.execute(script: migration.sql) }
        try connection.transaction { try connection.execute(script: migration.sql) }
        #expect(try schemaFingerprint(connection) == before)
        let functions = try connection.query("""
            SELECT count(*) FROM pg_proc WHERE pronamespace = 'pgpush'::regnamespace
               AND proname IN ('enqueue', 'enqueue_many', 'token_registered')
            """)
        #expect(functions.int(0, 0) == 3)
    }

    private func schemaFingerprint(_ connection: PostgresConnection) throws -> [String] {
        let result = try connection.query("""
            SELECT c.relkind::text || ':' || c.relname FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
             WHERE s.nspname = 'pgpush' ORDER BY 1
            """)
        return (0..<result.rowCount).compactMap { result.string($0, 0) }
    }
}

@Suite struct BadInputTests {
    static let token = String(repeating: "ab", count: 32)

    /// Each invalid row and the constraint whose name says what is wrong.
    static let cases: [(columns: String, values: [String?], constraint: String)] = [
        ("device_token, payload", ["xyz0", #"{"aps":{}}"#], "notifications_device_token_not_hex"),
        ("device_token, payload", ["abc", #"{"aps":{}}"#], "notifications_device_token_bad_length"),
        ("device_token, payload", ["", #"{"aps":{}}"#], "notifications_device_token_bad_length"),
        ("device_token, payload", [String(repeating: "a", count: 402), #"{"aps":{}}"#], "notifications_device_token_bad_length"),
        ("device_token, payload, push_type", [token, #"{"aps":{}}"#, "email"], "notifications_push_type_unknown"),
        ("device_token, payload, priority", [token, #"{"aps":{}}"#, "7"], "notifications_priority_not_1_5_10"),
        ("device_token, payload, push_type, priority",
         [token, #"{"aps":{"content-available":1}}"#, "background", "10"], "notifications_background_priority_must_be_5"),
        ("device_token, payload, push_type", [token, #"{"aps":{"alert":"hi"}}"#, "background"],
         "notifications_background_needs_content_available"),
        ("device_token, payload", [token, #"[1,2]"#], "notifications_payload_not_object"),
        ("device_token, payload", [token, #""text""#], "notifications_payload_not_object"),
        ("device_token, payload", [token, #"{"aps":{"alert":"\#(String(repeating: "x", count: 4090))"}}"#],
         "notifications_payload_too_large"),
        ("device_token, payload, push_type", [token, #"{"aps":{"alert":"\#(String(repeating: "x", count: 5110))"}}"#, "voip"],
         "notifications_payload_too_large"),
        ("device_token, payload, collapse_id", [token, #"{"aps":{}}"#, String(repeating: "c", count: 65)],
         "notifications_collapse_id_too_long"),
        ("device_token, payload, collapse_id", [token, #"{"aps":{}}"#, String(repeating: "é", count: 33)],
         "notifications_collapse_id_too_long"),
        ("device_token, payload, push_type", [token, #"{"aps":{}}"#, "mdm"], "notifications_mdm_needs_topic"),
        ("device_token, payload, topic", [token, #"{"aps":{}}"#, ""], "notifications_topic_empty"),
        ("device_token, payload, status", [token, #"{"aps":{}}"#, "done"], "notifications_status_unknown"),
        ("device_token, payload, push_type, priority", [token, #"{"aps":{}}"#, "pushtotalk", "5"],
         "notifications_pushtotalk_priority_10_or_service_update_5"),
        ("device_token, payload, push_type, priority", [token, #"{"aps":{"ptt-push-type":"service-update"}}"#, "pushtotalk", "1"],
         "notifications_pushtotalk_priority_10_or_service_update_5"),
        ("device_token, payload, push_type, priority", [token, #"{"aps":{}}"#, "liveactivity", "1"],
         "notifications_liveactivity_priority_must_be_5_or_10"),
        ("device_token, payload, push_type, priority", [token, #"{"aps":{}}"#, "location", "1"],
         "notifications_location_priority_must_be_5_or_10"),
        // sql/006_input_rules.sql. Before it, every one of these rows was accepted.
        ("device_token, payload, app", [token, #"{"aps":{}}"#, "shop\n"], "notifications_app_name_1_to_64_letters_digits_dot_dash"),
        ("device_token, payload, app", [token, #"{"aps":{}}"#, "sh'op"], "notifications_app_name_1_to_64_letters_digits_dot_dash"),
        ("device_token, payload, app", [token, #"{"aps":{}}"#, "\u{1B}[31mshop"], "notifications_app_name_1_to_64_letters_digits_dot_dash"),
        ("device_token, payload, app", [token, #"{"aps":{}}"#, String(repeating: "a", count: 65)],
         "notifications_app_name_1_to_64_letters_digits_dot_dash"),
        // What failed pg_notify with "payload string too long" before.
        ("device_token, payload, app", [token, #"{"aps":{}}"#, String(repeating: "a", count: 10_000)],
         "notifications_app_name_1_to_64_letters_digits_dot_dash"),
        ("device_token, payload, send_after", [token, #"{"aps":{}}"#, "-infinity"], "notifications_send_after_infinite"),
        ("device_token, payload, send_after", [token, #"{"aps":{}}"#, "infinity"], "notifications_send_after_infinite"),
        ("device_token, payload, expires_at", [token, #"{"aps":{}}"#, "infinity"], "notifications_expires_at_infinite"),
        ("device_token, payload, topic", [token, #"{"aps":{}}"#, "com.example\r\nx-evil: 1"], "notifications_topic_control_character"),
        ("device_token, payload, topic", [token, #"{"aps":{}}"#, "com.example\u{9B}31m"], "notifications_topic_control_character"),
        ("device_token, payload, collapse_id", [token, #"{"aps":{}}"#, "a\u{7F}b"], "notifications_collapse_id_control_character"),
        ("device_token, payload, collapse_id", [token, #"{"aps":{}}"#, "a\tb"], "notifications_collapse_id_control_character"),
        ("device_token, payload", [token, nested(depth: 65)], "notifications_payload_nested_deeper_than_64"),
        // 10,000 levels: the size rule used to recurse on it until "stack depth limit exceeded".
        ("device_token, payload", [token, nested(depth: 10_000)], "notifications_payload_nested_deeper_than_64"),
    ]

    /// A JSON object nesting `depth` levels: the object, then arrays.
    static func nested(depth: Int) -> String {
        "{\"a\":" + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}"
    }

    @Test(arguments: 0..<cases.count)
    func invalidInsertIsRejectedByNamedConstraint(index: Int) throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let bad = Self.cases[index]
        let placeholders = (1...bad.values.count).map { "$\($0)" }.joined(separator: ", ")
        let error = try #require(throws: PostgresError.self) {
            try connection.query("INSERT INTO pgpush.notifications (\(bad.columns)) VALUES (\(placeholders))", bad.values)
        }
        #expect(error.sqlState == "23514")
        #expect(error.constraint == bad.constraint)
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 0)
    }

    @Test func priorityRulesOfPushToTalkLiveActivityAndLocationLetGoodRowsIn() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let serviceUpdate = #"{"aps":{"ptt-push-type":"service-update"}}"#
        let accepted: [(payload: String, pushType: String, priority: String?)] = [
            (serviceUpdate, "pushtotalk", "5"), (serviceUpdate, "pushtotalk", "10"), (#"{"aps":{}}"#, "pushtotalk", "10"),
            (#"{"aps":{}}"#, "pushtotalk", nil), (#"{"aps":{}}"#, "liveactivity", "5"), (#"{"aps":{}}"#, "liveactivity", "10"),
            (#"{"aps":{}}"#, "liveactivity", nil), (#"{"aps":{}}"#, "location", "5"), (#"{"aps":{}}"#, "location", nil),
            (#"{"aps":{}}"#, "alert", "1"),
        ]
        for row in accepted {
            try connection.query("INSERT INTO pgpush.notifications (device_token, payload, push_type, priority) VALUES ($1, $2, $3, $4)",
                                 [Self.token, row.payload, row.pushType, row.priority])
        }
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == accepted.count)
    }

    /// The limits of 006 let the largest allowed values in.
    @Test func inputRulesLetTheirLimitsIn() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let accepted: [(app: String, payload: String, topic: String?, collapseID: String?)] = [
            (String(repeating: "A", count: 64), #"{"aps":{}}"#, nil, nil),
            ("shop.eu_2-b", Self.nested(depth: 64), "com.example.app", "coll-1 é"),
            ("x", #"{"aps":{"alert":"tab\tnewline\n"}}"#, "com.example.app.voip", String(repeating: "c", count: 64)),
        ]
        for row in accepted {
            try connection.query("""
                INSERT INTO pgpush.notifications (device_token, app, payload, topic, collapse_id, expires_at, send_after)
                VALUES ($1, $2, $3, $4, $5, now() + interval '1 day', now())
                """, [Self.token, row.app, row.payload, row.topic, row.collapseID])
        }
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == accepted.count)
        let depths = try connection.query("""
            SELECT pgpush.jsonb_nesting_depth('1', 64), pgpush.jsonb_nesting_depth('{}', 64),
                   pgpush.jsonb_nesting_depth('{"a":[1,{"b":[]}],"c":2}', 64), pgpush.jsonb_nesting_depth($1::jsonb, 64)
            """, [Self.nested(depth: 10_000)])
        #expect([depths.int(0, 0), depths.int(0, 1), depths.int(0, 2), depths.int(0, 3)] == [0, 1, 4, 65])
    }

    @Test func payloadLimitCountsCompactBytesNotJsonbText() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        // jsonb prints a blank after every ':' and ',', so this payload's text form
        // is over 4096 bytes while its compact form (what APNs gets) is exactly 4096.
        let keys = (0..<400).map { String(format: "\"k%03d\":1", $0) }.joined(separator: ",")
        let prefix = "{\"aps\":{\"alert\":\"\",\"x\":{" + keys + "}}"
        let filler = 4096 - prefix.utf8.count - "}".utf8.count
        let payload = prefix.replacingOccurrences(of: "\"alert\":\"\"", with: "\"alert\":\"" + String(repeating: "y", count: filler) + "\"") + "}"
        #expect(payload.utf8.count == 4096)
        let id = try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => $2::jsonb)", [Self.token, payload])
        #expect(id.int64(0, 0) != nil)
        let lengths = try connection.query("SELECT octet_length(payload::text), pgpush.compact_json_length(payload) FROM pgpush.notifications")
        #expect((lengths.int(0, 0) ?? 0) > 4096)
        #expect(lengths.int(0, 1) == 4096)
        let oneMore = payload.replacingOccurrences(of: "\"alert\":\"y", with: "\"alert\":\"yy")
        let error = try #require(throws: PostgresError.self) {
            try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => $2::jsonb)", [Self.token, oneMore])
        }
        #expect(error.constraint == "notifications_payload_too_large")
    }

    @Test func enqueueRaisesTheSameNamedErrors() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let error = try #require(throws: PostgresError.self) {
            try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => '{}', priority => 3)", [Self.token])
        }
        #expect(error.constraint == "notifications_priority_not_1_5_10")
        let badToken = try #require(throws: PostgresError.self) {
            try connection.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{}')", [[Self.token, "nothex"]])
        }
        #expect(badToken.constraint == "notifications_device_token_not_hex")
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 0)
    }

    @Test func validRowsTakeTheirDefaults() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        try connection.query("INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, '{\"aps\":{\"alert\":\"hi\"}}')",
                             [Self.token.uppercased()])
        let row = try connection.query("""
            SELECT app, push_type, priority IS NULL, topic IS NULL, status, attempts, apns_id IS NOT NULL,
                   send_after <= now(), finished_at IS NULL
              FROM pgpush.notifications
            """)
        #expect(row.string(0, 0) == "default")
        #expect(row.string(0, 1) == "alert")
        #expect(row.bool(0, 2) == true)
        #expect(row.bool(0, 3) == true)
        #expect(row.string(0, 4) == "queued")
        #expect(row.int(0, 5) == 0)
        #expect(row.bool(0, 6) == true)
        #expect(row.bool(0, 7) == true)
        #expect(row.bool(0, 8) == true)
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
