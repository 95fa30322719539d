import EmbeddedPostgres
import Foundation
import Locking
import Postgres
import PushQueue

/// Real PostgreSQL for tests: one throwaway cluster per test process, and a
/// fresh database per test so tests run in parallel without seeing each other.
public enum TestDatabase {
    public static let cluster: Result<EmbeddedPostgres, any Error> = Result { try EmbeddedPostgres.start() }

    /// The repository's `sql/` folder.
    public static let sqlDirectory: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("sql").path

    /// An empty database; returns its connection string.
    public static func empty() throws -> String {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20)
        return try cluster.get().createDatabase(String(name))
    }

    /// Roles belong to the whole cluster, which every test database shares: two tests creating
    /// the group roles of roles.sql at the same moment would collide, so they take turns.
    private static let rolesLock = Locked(())

    /// Runs sql/roles.sql (as the superuser `connection`): the group roles, pgpush_owner
    /// owning the schema, and the grants and row-level security of each group.
    public static func applyRoles(_ connection: PostgresConnection) throws {
        let roles = try String(contentsOfFile: sqlDirectory + "/roles.sql", encoding: .utf8)
        try rolesLock.withLock { _ in try connection.execute(script: roles) }
    }

    /// Creates LOGIN role `role` in `group` (as the superuser `admin`), gives it `apps` with
    /// pgpush.grant_app, and returns a connection string that logs in as it.
    public static func login(_ admin: PostgresConnection, conninfo: String, role: String, group: String,
                             apps: [String] = []) throws -> String {
        try admin.execute(script: "CREATE ROLE \(role) LOGIN IN ROLE \(group)")
        for app in apps {
            try admin.query("SELECT pgpush.grant_app($1, $2)", [role, app])
        }
        return conninfo.replacingOccurrences(of: "user=pgpush ", with: "user=\(role) ")
    }

    /// A database with every migration applied; returns its connection string.
    public static func migrated() throws -> String {
        let conninfo = try empty()
        let connection = try PostgresConnection(conninfo: conninfo)
        try MigrationRunner(migrations: Migration.load(directory: sqlDirectory)).migrate(connection)
        return conninfo
    }
}
