import EmbeddedPostgres
import Foundation
import Locking
import Postgres
import PushQueue

/// Real PostgreSQL for tests: one throwaway cluster per test process, and a
/// fresh database per test so tests run in parallel without seeing each other.
package enum TestDatabase {
    package static let cluster: Result<EmbeddedPostgres, any Error> = Result { try EmbeddedPostgres.start() }

    /// `PGPUSH_TEST_POOLER=pgbouncer`: every connection string handed out goes through a
    /// PgBouncer in transaction pooling mode in front of the cluster (test.sh runs the
    /// worker, queue and fault suites so once more). Superuser work on the cluster itself
    /// (creating databases and roles, restarts) still goes to it directly.
    package static let throughPooler = ProcessInfo.processInfo.environment["PGPUSH_TEST_POOLER"] == "pgbouncer"

    /// The PgBouncer in front of `cluster`, started on first use.
    package static let pooler: Result<EmbeddedPgBouncer, any Error> = Result {
        try EmbeddedPgBouncer.start(in: try cluster.get())
    }

    /// The repository's `sql/` folder.
    package static let sqlDirectory: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("sql").path

    /// An empty database; returns its connection string.
    package static func empty() throws -> String {
        throughPooler ? try emptyBehindPooler().pooled : try cluster.get().createDatabase(newName())
    }

    private static func newName() -> String {
        String("t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20))
    }

    /// An alert for each of the device tokens 1…`count` (64 hex digits), in one call.
    package static func enqueueAlerts(_ database: PostgresConnection, count: Int) throws {
        try database.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{\"aps\":{\"alert\":\"x\"}}')",
                           [(1...count).map { String(format: "%064x", $0) }])
    }

    /// A connection string that keeps its session: `conninfo` itself, or, through the
    /// pooler, the cluster directly (same database and user). What LISTEN needs, and what
    /// a worker's `listenDatabaseURL` is in production behind PgBouncer.
    package static func session(_ conninfo: String) throws -> String {
        guard throughPooler else { return conninfo }
        let pooler = try pooler.get(), cluster = try cluster.get()
        return conninfo.replacingOccurrences(of: "host=\(pooler.directory) port=\(pooler.port)",
                                             with: "host=\(cluster.directory) port=\(cluster.port)")
    }

    /// Roles belong to the whole cluster, which every test database shares: two tests creating
    /// the group roles of roles.sql at the same moment would collide, so they take turns.
    private static let rolesLock = Locked(())

    /// Runs sql/roles.sql (as the superuser `connection`): the group roles, pgpush_owner
    /// owning the schema, and the grants and row-level security of each group.
    package static func applyRoles(_ connection: PostgresConnection) throws {
        let roles = try String(contentsOfFile: sqlDirectory + "/roles.sql", encoding: .utf8)
        try rolesLock.withLock { _ in try connection.execute(script: roles) }
    }

    /// Creates LOGIN role `role` in `group` (as the superuser `admin`), gives it `apps` with
    /// pgpush.grant_app, and returns a connection string that logs in as it.
    package static func login(_ admin: PostgresConnection, conninfo: String, role: String, group: String,
                             apps: [String] = []) throws -> String {
        try admin.execute(script: "CREATE ROLE \(role) LOGIN IN ROLE \(group)")
        for app in apps {
            try admin.query("SELECT pgpush.grant_app($1, $2)", [role, app])
        }
        if throughPooler { try pooler.get().allow(user: role) }
        return conninfo.replacingOccurrences(of: "user=pgpush ", with: "user=\(role) ")
    }

    /// A migrated database reached both through the PgBouncer in front of the cluster
    /// (started on first use) and directly.
    package static func migratedBehindPooler() throws -> (pooled: String, direct: String) {
        let (pooled, direct) = try emptyBehindPooler()
        try migrate(direct)
        return (pooled, direct)
    }

    /// An empty database reached both through the PgBouncer and directly.
    package static func emptyBehindPooler() throws -> (pooled: String, direct: String) {
        let name = newName()
        let direct = try cluster.get().createDatabase(name)
        return (try pooler.get().conninfo(database: name), direct)
    }

    /// Applies every migration of `sql/` to the database of `conninfo` (any cluster's).
    package static func migrate(_ conninfo: String) throws {
        try MigrationRunner(migrations: Migration.load(directory: sqlDirectory)).migrate(PostgresConnection(conninfo: conninfo))
    }

    /// Cuts the history of a migrated database without rows into partitions of `span` ids,
    /// `ahead` of them from the next id on, in place of the empty ones migrate made (as the
    /// owner): small partitions, so a test fills and retires some with a few rows.
    package static func cutHistory(_ connection: PostgresConnection, span: Int, ahead: Int) throws {
        try connection.execute(script: """
            UPDATE pgpush.history_partitioning SET partition_span = \(span), partitions_ahead = \(ahead);
            DO $$
            DECLARE
                part record;
            BEGIN
                FOR part IN SELECT partition FROM pgpush.history_partitions WHERE NOT is_default LOOP
                    EXECUTE format('DROP TABLE %s', part.partition);
                END LOOP;
            END
            $$;
            SELECT pgpush.create_history_partitions();
            """)
    }

    /// A database with every migration applied; returns its connection string. Directly on
    /// the cluster it is a copy of one migrated once (`CREATE DATABASE … TEMPLATE`): the ten
    /// migrations, run for each of about a hundred tests, kept both of the test process's
    /// shared threads busy on a loaded machine for long enough to stall tests waiting on
    /// timers. Through the pooler every test still migrates its own (the PgBouncer stage
    /// checks migrate through it).
    package static func migrated() throws -> String {
        if throughPooler {
            let conninfo = try empty()
            try migrate(conninfo)
            return conninfo
        }
        return try cluster.get().createDatabase(newName(), template: migratedTemplate.get())
    }

    /// The database `migrated()` copies, migrated on first use. No session stays on it.
    private static let migratedTemplate: Result<String, any Error> = Result {
        let name = "t_migrated_template"
        try migrate(try cluster.get().createDatabase(name))
        return name
    }
}
