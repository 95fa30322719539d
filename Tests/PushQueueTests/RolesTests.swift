import Foundation
import PGPushTestSupport
import Postgres
import PushQueue
import Testing

/// sql/roles.sql: each role can do its job and nothing more.
@Suite(.serialized) struct RolesTests {
    static let token = String(repeating: "0a", count: 32)

    /// A migrated database with roles.sql applied, and login roles that are members of each group.
    /// `app` may use app `default` (the one its rows go to when none is named).
    struct Setup {
        let conninfo: String
        let app: PostgresConnection
        let worker: PostgresConnection
        let monitor: PostgresConnection
        let owner: PostgresConnection
        let suffix = String(UUID().uuidString.prefix(8).lowercased())

        init() throws {
            let conninfo = try TestDatabase.migrated()
            let owner = try PostgresConnection(conninfo: conninfo)
            self.conninfo = conninfo
            self.owner = owner
            try TestDatabase.applyRoles(owner)
            try TestDatabase.applyRoles(owner)   // safe to run again
            let suffix = suffix
            func login(_ name: String, _ group: String, _ apps: [String] = []) throws -> PostgresConnection {
                try PostgresConnection(conninfo: TestDatabase.login(owner, conninfo: conninfo, role: "login_\(name)_\(suffix)",
                                                                    group: group, apps: apps))
            }
            app = try login("app", "pgpush_app", ["default"])
            worker = try login("worker", "pgpush_worker")
            monitor = try login("monitor", "pgpush_monitor")
        }

        /// A new LOGIN role in `group`, given `apps` with pgpush.grant_app, connected with its own conninfo.
        func login(_ name: String, group: String, apps: [String] = []) throws -> PostgresConnection {
            try PostgresConnection(conninfo: TestDatabase.login(owner, conninfo: conninfo, role: role(name), group: group, apps: apps))
        }

        /// The role's name: `login_<name>_<suffix>` (roles belong to the whole cluster, which
        /// every test database shares).
        func role(_ name: String) -> String { "login_\(name)_\(suffix)" }
    }

    private func expectDenied(_ connection: PostgresConnection, _ sql: String, _ parameters: [(any PostgresParameter)?] = [],
                              sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try connection.query(sql, parameters)
            Issue.record("expected permission denied for: \(sql)", sourceLocation: sourceLocation)
        } catch let error as PostgresError {
            #expect(error.sqlState == "42501", "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func eachRoleDoesItsJobAndNoMore() throws {
        let setup = try Setup()

        // Application: enqueue (both ways), read, cancel.
        let first = try setup.app.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{\"alert\":\"a\"}}', idempotency_key => 'k1')", [Self.token])
        let again = try setup.app.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{\"alert\":\"a\"}}', idempotency_key => 'k1')", [Self.token])
        #expect(first.int64(0, 0) != nil && first.int64(0, 0) == again.int64(0, 0))
        try setup.app.query("INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, '{}')", [Self.token])
        let toCancel = try setup.app.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{}')", [[Self.token, Self.token]])
        let ids = (0..<toCancel.rowCount).compactMap { toCancel.int64($0, 0) }
        #expect(try setup.app.query("SELECT pgpush.cancel($1)", [ids]).rowCount == 2)
        #expect(try setup.app.query("SELECT count(*) FROM pgpush.queue_depth").rowCount == 1)
        expectDenied(setup.app, "UPDATE pgpush.notifications SET status = 'delivered'")
        expectDenied(setup.app, "DELETE FROM pgpush.notifications")
        expectDenied(setup.app, "INSERT INTO pgpush.notifications (device_token, payload, status) VALUES ($1, '{}', 'delivered')", [Self.token])
        expectDenied(setup.app, "INSERT INTO pgpush.delivery_errors (notification_id, app, device_token, attempt, reason) VALUES (1, 'a', 'b', 1, 'x')")
        expectDenied(setup.app, "SELECT pgpush.prune('0 seconds')")
        expectDenied(setup.app, "DELETE FROM pgpush.workers")

        // Worker: the whole cycle through the queue type, then prune.
        let queue = NotificationQueue(connection: setup.worker, workerID: "role-worker")
        try queue.register(WorkerRecord(id: "role-worker", host: "h", pid: 1, version: "t", apps: ["default"], connections: 1))
        let claimed = try queue.claim(app: "default", limit: 10, lease: .seconds(30)).claimed
        #expect(claimed.count == 2)
        let outcomes = claimed.map {
            Outcome(id: $0.id, claimCount: $0.claimCount, disposition: .failed, httpStatus: 410, reason: "Unregistered",
                    recordsError: true, invalidatesToken: true)
        }
        #expect(try queue.complete(outcomes).count == 2)
        try queue.heartbeat(WorkerCounters())
        try queue.reportAppHealth(app: "default", healthy: true, reason: nil)
        #expect(try queue.rescueExpiredLeases(maxAttempts: 5) == 0)
        try queue.deregister()
        // Its rows share a partition with ids still to come, so prune drops nothing yet.
        #expect(try queue.prune(olderThan: .zero) == 0)
        // Ids were used, so one more partition is made to keep two partitions' worth ready.
        #expect(try queue.createHistoryPartitions() == 1)
        // Partitions are reached through their table only, where row-level security applies.
        expectDenied(setup.worker, "SELECT count(*) FROM pgpush.notifications_default")
        expectDenied(setup.app, "SELECT count(*) FROM pgpush.notifications_1")
        expectDenied(setup.app, "SELECT count(*) FROM pgpush.idempotency_keys")
        expectDenied(setup.app, "SELECT pgpush.create_history_partitions()")
        expectDenied(setup.monitor, "SELECT count(*) FROM pgpush.delivery_errors_1")
        expectDenied(setup.worker, "INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, '{}')", [Self.token])
        expectDenied(setup.worker, "DELETE FROM pgpush.notifications")
        expectDenied(setup.worker, "SELECT pgpush.cancel('{1}')")
        expectDenied(setup.worker, "DROP TABLE pgpush.invalid_tokens")

        // Monitor: reads only, and no device tokens (MonitorTests).
        for view in ["queue_depth", "throughput", "error_breakdown", "worker_health", "app_health"] {
            _ = try setup.monitor.query("SELECT * FROM pgpush.\(view)")
        }
        #expect(try setup.monitor.query("SELECT count(*) FROM pgpush.invalid_tokens").int(0, 0) == 1)
        #expect(try setup.monitor.query("SELECT reason FROM pgpush.invalid_tokens").string(0, 0) == "Unregistered")
        expectDenied(setup.monitor, "SELECT pgpush.enqueue(device_token => $1, payload => '{}')", [Self.token])
        expectDenied(setup.monitor, "UPDATE pgpush.notifications SET status = 'cancelled'")
        expectDenied(setup.monitor, "SELECT pgpush.cancel('{1}')")
        expectDenied(setup.monitor, "DELETE FROM pgpush.delivery_errors")

        // The token is now listed Unregistered: the worker's claim finishes the next row for it
        // with its own rights, and only the application may take the token off the list.
        let dead = try setup.app.query("SELECT pgpush.enqueue(device_token => $1, payload => '{}', deliver_once => true)",
                                       [Self.token]).int64(0, 0)
        #expect(try queue.claim(app: "default", limit: 10, lease: .seconds(30)).knownInvalidIDs == [try #require(dead)])
        expectDenied(setup.monitor, "SELECT pgpush.token_registered('default', $1)", [Self.token])
        expectDenied(setup.worker, "SELECT pgpush.token_registered('default', $1)", [Self.token])
        #expect(try setup.app.query("SELECT pgpush.token_registered('default', $1)", [Self.token]).bool(0, 0) == true)
    }

    // MARK: Attacks of one tenant on another (sql/007_per_app_access.sql)

    static let payload = #"{"aps":{"alert":"secret of the app"}}"#

    /// Two applications, each granted its own app: neither reads, enqueues for, cancels or
    /// squats the other's rows. Before 007 every one of these attacks succeeded.
    @Test func anApplicationSeesAndChangesOnlyItsGrantedApps() throws {
        let setup = try Setup()
        let shop = try setup.login("shop", group: "pgpush_app", apps: ["shop"])
        let news = try setup.login("news", group: "pgpush_app", apps: ["news"])
        let enqueue = "SELECT pgpush.enqueue(device_token => $1, payload => $2::jsonb, app => $3, idempotency_key => $4)"
        let newsRow = try #require(try news.query(enqueue, [Self.token, Self.payload, "news", "order-1"]).int64(0, 0))
        try setup.worker.query("""
            INSERT INTO pgpush.delivery_errors (notification_id, app, device_token, attempt, reason) VALUES ($1, 'news', $2, 1, 'BadTopic')
            """, [newsRow, Self.token])
        try setup.worker.query("INSERT INTO pgpush.invalid_tokens (app, device_token, reason) VALUES ('news', $1, 'Unregistered')",
                               [Self.token])

        // Reading: every table and view shows shop nothing of news.
        for query in ["SELECT count(*) FROM pgpush.notifications", "SELECT count(*) FROM pgpush.delivery_errors",
                      "SELECT count(*) FROM pgpush.invalid_tokens", "SELECT count(*) FROM pgpush.queue_depth",
                      "SELECT count(*) FROM pgpush.error_breakdown"] {
            #expect(try shop.query(query).int(0, 0) == 0, "\(query)")
            #expect(try news.query(query).int(0, 0) == 1, "\(query)")
        }
        #expect(try shop.query("SELECT payload FROM pgpush.notifications WHERE id = $1", [newsRow]).rowCount == 0)
        // Each sees its own grant only.
        #expect(try shop.query("SELECT string_agg(app, ',') FROM pgpush.app_grants").string(0, 0) == "shop")

        // Enqueueing for news: refused by row-level security, every way.
        expectDenied(shop, enqueue, [Self.token, Self.payload, "news", nil])
        expectDenied(shop, "SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{}', app => 'news')", [[Self.token]])
        expectDenied(shop, "INSERT INTO pgpush.notifications (app, device_token, payload) VALUES ('news', $1, '{}')", [Self.token])
        // Squatting news's next idempotency key, then news enqueueing with it: news gets a row
        // of its own, and shop's key of the same name in shop is another row.
        expectDenied(shop, enqueue, [Self.token, Self.payload, "news", "order-2"])
        let shopOrder2 = try #require(try shop.query(enqueue, [Self.token, Self.payload, "shop", "order-2"]).int64(0, 0))
        let newsOrder2 = try #require(try news.query(enqueue, [Self.token, Self.payload, "news", "order-2"]).int64(0, 0))
        #expect(shopOrder2 != newsOrder2)
        #expect(try setup.owner.query("SELECT app FROM pgpush.notifications WHERE id = $1", [newsOrder2]).string(0, 0) == "news")
        #expect(try shop.query(enqueue, [Self.token, Self.payload, "shop", "order-2"]).int64(0, 0) == shopOrder2)

        // Cancelling news's row, clearing news's token: nothing happens.
        #expect(try shop.query("SELECT pgpush.cancel($1)", [[newsRow, newsOrder2]]).rowCount == 0)
        #expect(try shop.query("SELECT pgpush.token_registered('news', $1)", [Self.token]).bool(0, 0) == false)
        let untouched = try setup.owner.query("""
            SELECT (SELECT count(*) FROM pgpush.notifications WHERE app = 'news' AND status = 'queued'),
                   (SELECT count(*) FROM pgpush.invalid_tokens WHERE app = 'news')
            """)
        #expect(untouched.int(0, 0) == 2 && untouched.int(0, 1) == 1)
        // news itself can.
        #expect(try news.query("SELECT pgpush.cancel($1)", [[newsRow]]).int64(0, 0) == newsRow)
        #expect(try news.query("SELECT pgpush.token_registered('news', $1)", [Self.token]).bool(0, 0) == true)

        // Granting is the owner's: an application cannot grant itself more.
        expectDenied(shop, "SELECT pgpush.grant_app($1, 'news')", [setup.role("shop")])
        expectDenied(shop, "INSERT INTO pgpush.app_grants (role, app) VALUES ($1, 'news')", [setup.role("shop")])
    }

    /// A member of pgpush_app without a grant sees and changes nothing; '*' is every app; a
    /// revoked grant ends access. Before 007 the member without a grant did all of it.
    @Test func withoutAGrantNothingWithStarEverything() throws {
        let setup = try Setup()
        let nobody = try setup.login("nobody", group: "pgpush_app")
        let everything = try setup.login("all", group: "pgpush_app", apps: ["*"])
        let ids = try everything.query("""
            SELECT pgpush.enqueue(device_token => $1, payload => '{}', app => a) FROM unnest(ARRAY['shop', 'news']) AS a
            """, [Self.token])
        #expect(ids.rowCount == 2)
        #expect(try everything.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 2)
        #expect(try nobody.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 0)
        #expect(try nobody.query("SELECT count(*) FROM pgpush.queue_depth").int(0, 0) == 0)
        expectDenied(nobody, "SELECT pgpush.enqueue(device_token => $1, payload => '{}')", [Self.token])
        #expect(try nobody.query("SELECT pgpush.cancel($1)", [(0..<2).compactMap { ids.int64($0, 0) }]).rowCount == 0)

        #expect(try setup.owner.query("SELECT pgpush.revoke_app($1, '*')", [setup.role("all")]).bool(0, 0) == true)
        #expect(try everything.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 0)
        #expect(try setup.owner.query("SELECT pgpush.revoke_app($1, '*')", [setup.role("all")]).bool(0, 0) == false)
        let missing = try #require(throws: PostgresError.self) {
            try setup.owner.query("SELECT pgpush.grant_app('no_such_role_\(setup.suffix)', 'shop')")
        }
        #expect(missing.sqlState == "42704")
        let badName = try #require(throws: PostgresError.self) {
            try setup.owner.query("SELECT pgpush.grant_app($1, 'sh op')", [setup.role("all")])
        }
        #expect(badName.constraint == "app_grants_app_name_or_star")
    }

    /// The worker writes only the columns a worker owns, and only on unfinished rows. Before
    /// 007 it could rewrite a payload or token and put a cancelled row back in the queue.
    @Test func theWorkerChangesOnlyWhatAWorkerOwns() throws {
        let setup = try Setup()
        let ids = try setup.app.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{}')", [[Self.token, Self.token]])
        let queued = try #require(ids.int64(0, 0)), cancelled = try #require(ids.int64(1, 0))
        #expect(try setup.app.query("SELECT pgpush.cancel($1)", [[cancelled]]).rowCount == 1)

        expectDenied(setup.worker, "UPDATE pgpush.notifications SET payload = '{\"aps\":{\"alert\":\"phish\"}}' WHERE id = $1", [queued])
        expectDenied(setup.worker, "UPDATE pgpush.notifications SET device_token = $2 WHERE id = $1", [queued, String(repeating: "ff", count: 32)])
        expectDenied(setup.worker, "UPDATE pgpush.notifications SET app = 'other', topic = 'x' WHERE id = $1", [queued])
        expectDenied(setup.worker, "INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, '{}')", [Self.token])
        expectDenied(setup.worker, "DELETE FROM pgpush.invalid_tokens")
        // Un-cancelling matches no row: a finished row is not the worker's to change.
        #expect(try setup.worker.query("UPDATE pgpush.notifications SET status = 'queued', finished_at = NULL WHERE id = $1",
                                       [cancelled]).affectedRows == 0)
        #expect(try setup.owner.query("SELECT status FROM pgpush.notifications WHERE id = $1", [cancelled]).string(0, 0) == "cancelled")
        // What it owns, it still does (the whole cycle is in eachRoleDoesItsJobAndNoMore).
        let claimed = try NotificationQueue(connection: setup.worker, workerID: "w").claim(app: "default", limit: 10, lease: .seconds(30))
        #expect(claimed.claimed.map(\.id) == [queued])
    }

    /// The monitor reads states, counts and reasons of every app, never a payload, device token,
    /// collapse id or idempotency key. Before 007 it read all of them.
    @Test func theMonitorReadsStatesNotPayloads() throws {
        let setup = try Setup()
        let everything = try setup.login("all", group: "pgpush_app", apps: ["*"])
        for app in ["shop", "news"] {
            try everything.query("SELECT pgpush.enqueue(device_token => $1, payload => $2::jsonb, app => $3, collapse_id => 'c', idempotency_key => 'k')",
                                 [Self.token, Self.payload, app])
        }
        try setup.worker.query("INSERT INTO pgpush.invalid_tokens (app, device_token, reason) VALUES ('news', $1, 'Unregistered')", [Self.token])
        try setup.worker.query("INSERT INTO pgpush.delivery_errors (notification_id, app, device_token, attempt, reason) VALUES (1, 'news', $1, 1, 'BadTopic')",
                               [Self.token])
        for query in ["SELECT payload FROM pgpush.notifications", "SELECT device_token FROM pgpush.notifications",
                      "SELECT collapse_id FROM pgpush.notifications", "SELECT idempotency_key FROM pgpush.notifications",
                      "SELECT * FROM pgpush.notifications", "SELECT device_token FROM pgpush.invalid_tokens",
                      "SELECT device_token FROM pgpush.delivery_errors", "SELECT * FROM pgpush.delivery_errors"] {
            expectDenied(setup.monitor, query)
        }
        let states = try setup.monitor.query("SELECT app, status, attempts, last_reason FROM pgpush.notifications ORDER BY app")
        #expect((0..<states.rowCount).compactMap { states.string($0, 0) } == ["news", "shop"])
        #expect(try setup.monitor.query("SELECT count(*) FROM pgpush.queue_depth").int(0, 0) == 2)
        #expect(try setup.monitor.query("SELECT reason FROM pgpush.delivery_errors").string(0, 0) == "BadTopic")
        #expect(try setup.monitor.query("SELECT app, reason, times_seen FROM pgpush.invalid_tokens").string(0, 1) == "Unregistered")
    }

    /// roles.sql hands the schema to pgpush_owner; a login role in it migrates (a new
    /// migration's objects belong to pgpush_owner too), the worker cannot. Before, there was no
    /// owner role, and the shipped systemd unit ran `pgpush migrate` as the worker.
    @Test func migrationsRunAsTheOwnerNotTheWorker() throws {
        let setup = try Setup()
        let migrator = try setup.login("migrator", group: "pgpush_owner")
        var migrations = try Migration.load(directory: TestDatabase.sqlDirectory)
        #expect(try MigrationRunner(migrations: migrations).migrate(migrator).isEmpty)
        migrations.append(Migration(version: 999, name: "later", sql: """
            CREATE TABLE pgpush.later (x int);
            CREATE FUNCTION pgpush.later_count() RETURNS bigint LANGUAGE sql SECURITY DEFINER
                SET search_path = pg_catalog, pgpush AS 'SELECT count(*) FROM pgpush.notifications';
            """))
        let refused = try #require(throws: (any Error).self) { try MigrationRunner(migrations: migrations).migrate(setup.worker) }
        #expect("\(refused)".contains("permission denied"))
        #expect(try MigrationRunner(migrations: migrations).migrate(migrator) == [999])
        let owners = try setup.owner.query("""
            SELECT (SELECT relowner::regrole::text FROM pg_class WHERE oid = 'pgpush.later'::regclass),
                   (SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'pgpush.later_count'::regproc),
                   (SELECT count(*) FROM pg_class WHERE relnamespace = 'pgpush'::regnamespace AND relowner::regrole::text <> 'pgpush_owner')
            """)
        #expect(owners.string(0, 0) == "pgpush_owner" && owners.string(0, 1) == "pgpush_owner" && owners.int(0, 2) == 0)
        #expect(try migrator.query("SELECT current_user").string(0, 0) == setup.role("migrator"))
    }

    /// A database where the roles.sql of 001-005 ran takes 007: the old table-wide grants (the
    /// monitor reading payloads, the worker updating any column) are replaced by 007 itself,
    /// before anyone runs roles.sql again.
    @Test func migration007ReplacesTheGrantsOfTheOldRolesScript() throws {
        _ = try Setup()   // the group roles exist (they belong to the cluster)
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        let all = try Migration.load(directory: TestDatabase.sqlDirectory)
        try MigrationRunner(migrations: all.filter { $0.version <= 6 }).migrate(connection)
        // What the old roles.sql granted on the queue (its role membership is left out: roles
        // are shared with the tests running beside this one).
        try connection.execute(script: """
            GRANT SELECT ON pgpush.notifications, pgpush.invalid_tokens TO pgpush_monitor;
            GRANT SELECT, UPDATE ON pgpush.notifications TO pgpush_worker;
            """)
        try MigrationRunner(migrations: all).migrate(connection)
        let privileges = try connection.query("""
            SELECT has_column_privilege('pgpush_monitor', 'pgpush.notifications', 'payload', 'SELECT'),
                   has_column_privilege('pgpush_monitor', 'pgpush.invalid_tokens', 'device_token', 'SELECT'),
                   has_column_privilege('pgpush_worker', 'pgpush.notifications', 'payload', 'UPDATE'),
                   has_column_privilege('pgpush_worker', 'pgpush.notifications', 'status', 'UPDATE'),
                   has_column_privilege('pgpush_monitor', 'pgpush.notifications', 'status', 'SELECT'),
                   (SELECT relrowsecurity FROM pg_class WHERE oid = 'pgpush.notifications'::regclass)
            """)
        #expect((0..<6).map { privileges.bool(0, $0) } == [false, false, false, true, true, true])
    }

    /// Every SECURITY DEFINER function in the schema fixes its search_path, so a caller's own
    /// schema cannot put a function or table in front of the owner's.
    @Test func everySecurityDefinerFunctionFixesItsSearchPath() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let loose = try connection.query("""
            SELECT proname FROM pg_proc WHERE pronamespace = 'pgpush'::regnamespace AND prosecdef
               AND NOT coalesce(proconfig::text[] && ARRAY['search_path=pg_catalog, pgpush'], false)
            """)
        #expect(loose.rowCount == 0)
        // claim_idempotency_key, create_history_partitions, idempotency_key_holder, cancel, requeue (018), token_registered, prune.
        #expect(try connection.query("SELECT count(*) FROM pg_proc WHERE pronamespace = 'pgpush'::regnamespace AND prosecdef").int(0, 0) == 7)
    }
}
