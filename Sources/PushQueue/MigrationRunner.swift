import Postgres

/// Applies `sql/` migrations in order, each in its own transaction.
///
/// Several processes may run it at once (every worker runs it at start-up in
/// some deployments): each transaction first takes a transaction-level advisory
/// lock, so they take turns, and checks the versions table under it, so every run
/// after the first is a no-op. Nothing outlives a transaction, neither the lock nor
/// the owner role: through a transaction pooler (PgBouncer, `pool_mode =
/// transaction`) consecutive transactions may run on different server
/// connections, and a session lock would be taken on one and released on
/// another, or never.
package struct MigrationRunner {
    /// Arbitrary but fixed: "pgpush" in ASCII, plus 1.
    static let advisoryLockKey: Int64 = 0x7067_7075_7368_0001
    /// The role sql/roles.sql makes the owner of schema pgpush.
    static let ownerRole = "pgpush_owner"

    package let migrations: [Migration]

    package init(migrations: [Migration]) {
        self.migrations = migrations
    }

    /// Returns the versions applied by this call (empty when up to date).
    @discardableResult
    package func migrate(_ connection: PostgresConnection) throws -> [Int] {
        try connection.transaction {
            try takeTurn(connection)
            // CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when the schema
            // exists, which the owner role need not have: only create it when missing.
            try connection.execute(script: """
                DO $$ BEGIN IF to_regnamespace('pgpush') IS NULL THEN CREATE SCHEMA pgpush; END IF; END $$;
                CREATE TABLE IF NOT EXISTS pgpush.schema_migrations (
                    version    integer PRIMARY KEY,
                    name       text        NOT NULL,
                    checksum   text        NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                );
                """)
        }
        var applied: [Int] = []
        for migration in migrations where try apply(migration, connection) {
            applied.append(migration.version)
        }
        return applied
    }

    /// Applies `migration` unless it already was; true when this call applied it.
    private func apply(_ migration: Migration, _ connection: PostgresConnection) throws -> Bool {
        try connection.transaction {
            try takeTurn(connection)
            let recorded = try connection.query("SELECT checksum FROM pgpush.schema_migrations WHERE version = $1",
                                                [migration.version])
            if recorded.rowCount > 0 {
                guard recorded.string(0, 0) == migration.checksum else {
                    throw MigrationError(
                        "migration \(migration.version) (\(migration.name)) was changed after it was applied; "
                            + "add a new migration instead of editing an applied one")
                }
                return false
            }
            do {
                try connection.execute(script: migration.sql)
                try connection.query(
                    "INSERT INTO pgpush.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    [migration.version, migration.name, migration.checksum])
            } catch let error as PostgresError {
                throw MigrationError("migration \(migration.version) (\(migration.name)) failed: \(error)")
            }
            return true
        }
    }

    /// The start of every migration transaction: wait for any other migrator's transaction to
    /// end, then act as the schema's owner role for this transaction only.
    ///
    /// Once sql/roles.sql handed the schema to pgpush_owner, migrations run as that role (the
    /// connecting role is a member of it): what they create belongs to the owner like the
    /// rest, and the SECURITY DEFINER functions keep running as the tables' owner.
    private func takeTurn(_ connection: PostgresConnection) throws {
        try connection.query("SELECT pg_advisory_xact_lock($1)", [Self.advisoryLockKey])
        let becomesOwner = try connection.query("""
            SELECT EXISTS (SELECT 1 FROM pg_namespace n
                            WHERE n.nspname = 'pgpush' AND n.nspowner::regrole::text = $1
                              AND current_user <> $1 AND pg_has_role(current_user, n.nspowner, 'MEMBER'))
            """, [Self.ownerRole]).bool(0, 0) == true
        if becomesOwner { try connection.query("SET LOCAL ROLE pgpush_owner") }
    }
}
