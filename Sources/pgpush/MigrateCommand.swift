import Foundation
import Postgres
import PushQueue

enum MigrateCommand {
    static let help = """
        pgpush migrate — create or update the pgpush schema in PostgreSQL

        Applies the numbered files of sql/ (001_queue.sql, …) in order, each in its own
        transaction, under an advisory lock: several processes may run it at once, and a
        second run changes nothing.

        Run it as a login role in pgpush_owner (sql/roles.sql), which owns the schema; once
        roles.sql has run, migrations run as pgpush_owner. The worker's role may not change
        the schema.

        Flags:
          --database-url URL   libpq connection string or URI (default: $DATABASE_URL, then PG* variables)
          --sql-dir DIR        the migrations folder (default: $PGPUSH_SQL_DIR, share/pgpush/sql beside
                               the binary, or sql/ of the source checkout)

        Examples:
          DATABASE_URL=postgres://pgpush@db/app pgpush migrate
          pgpush migrate --database-url "host=/run/postgresql dbname=app"
        """

    static let flags: Set<String> = ["database-url", "sql-dir", "help"]

    static func run(_ arguments: Arguments) throws -> Int32 {
        guard let directory = arguments.value("sql-dir") ?? Migration.locateDirectory() else {
            throw UsageError("cannot find the sql/ migrations folder: pass --sql-dir or set PGPUSH_SQL_DIR")
        }
        let migrations = try Migration.load(directory: directory)
        let conninfo = try arguments.databaseURL()
        let connection = try PostgresConnection(conninfo: conninfo)
        let applied = try MigrationRunner(migrations: migrations).migrate(connection)
        if applied.isEmpty {
            print("pgpush schema is up to date (version \(migrations.last?.version ?? 0)).")
        } else {
            let names = migrations.filter { applied.contains($0.version) }.map { String(format: "%03d_%@", $0.version, $0.name) }
            print("applied \(applied.count) migration(s): \(names.joined(separator: ", "))")
        }
        return 0
    }
}

