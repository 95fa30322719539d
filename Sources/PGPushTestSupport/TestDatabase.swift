import EmbeddedPostgres
import Foundation
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

    /// A database with every migration applied; returns its connection string.
    public static func migrated() throws -> String {
        let conninfo = try empty()
        let connection = try PostgresConnection(conninfo: conninfo)
        try MigrationRunner(migrations: Migration.load(directory: sqlDirectory)).migrate(connection)
        return conninfo
    }
}
