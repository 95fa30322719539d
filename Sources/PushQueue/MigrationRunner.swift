import Postgres

/// Applies `sql/` migrations in order, each in its own transaction.
///
/// Several processes may run it at once (every worker runs it at start-up in
/// some deployments): a session advisory lock makes them take turns, and the
/// versions table makes every run after the first a no-op.
public struct MigrationRunner {
    /// Arbitrary but fixed: "pgpush" in ASCII, plus 1.
    static let advisoryLockKey: Int64 = 0x7067_7075_7368_0001
    /// The role sql/roles.sql makes the owner of schema pgpush.
    static let ownerRole = "pgpush_owner"

    public let migrations: [Migration]

    public init(migrations: [Migration]) {
        self.migrations = migrations
    }

    /// Returns the versions applied by this call (empty when up to date).
    @discardableResult
    public func migrate(_ connection: PostgresConnection) throws -> [Int] {
        try connection.query("SELECT pg_advisory_lock($1)", [Self.advisoryLockKey])
        defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [Self.advisoryLockKey]) }

        // Once sql/roles.sql handed the schema to pgpush_owner, migrations run as that role
        // (the connecting role is a member of it): what they create belongs to the owner like
        // the rest, and the SECURITY DEFINER functions keep running as the tables' owner.
        let becomesOwner = try connection.query("""
            SELECT EXISTS (SELECT 1 FROM pg_namespace n
                            WHERE n.nspname = 'pgpush' AND n.nspowner::regrole::text = $1
                              AND current_user <> $1 AND pg_has_role(current_user, n.nspowner, 'MEMBER'))
            """, [Self.ownerRole]).bool(0, 0) == true
        if becomesOwner { try connection.query("SET ROLE pgpush_owner") }
        defer { if becomesOwner { _ = try? connection.query("RESET ROLE") } }

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
        let rows = try connection.query("SELECT version, checksum FROM pgpush.schema_migrations")
        var appliedChecksums: [Int: String] = [:]
        for row in 0..<rows.rowCount {
            if let version = rows.int(row, 0) { appliedChecksums[version] = rows.string(row, 1) }
        }

        var applied: [Int] = []
        for migration in migrations {
            if let checksum = appliedChecksums[migration.version] {
                guard checksum == migration.checksum else {
                    throw MigrationError(
                        "migration \(migration.version) (\(migration.name)) was changed after it was applied; "
                            + "add a new migration instead of editing an applied one")
                }
                continue
            }
            do {
                try connection.transaction {
                    try connection.execute(script: migration.sql)
                    try connection.query(
                        "INSERT INTO pgpush.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                        [migration.version, migration.name, migration.checksum])
                }
            } catch let error as PostgresError {
                throw MigrationError("migration \(migration.version) (\(migration.name)) failed: \(error)")
            }
            applied.append(migration.version)
        }
        return applied
    }
}
