import EmbeddedPostgres
import Foundation
import PGPushTestSupport
import Postgres
import Testing

/// sql/schema.sql is the schema the migrations produce, as pg_dump prints it: one file to
/// read instead of replaying every migration in one's head. This test migrates a fresh
/// database, dumps it and compares; when a migration changes, regenerate the file with
///
///     PGPUSH_WRITE_SCHEMA=1 swift test --filter SchemaFileTests
///
/// and commit it with the migration.
@Suite struct SchemaFileTests {
    static let path = TestDatabase.sqlDirectory + "/schema.sql"

    @Test func schemaFileIsWhatTheMigrationsProduce() throws {
        let cluster = try TestDatabase.cluster.get()
        // The group roles exist before the migrations run, as on a cluster where they ran once
        // already (the migrations then grant on what they create, partitions included), so
        // the file does not depend on which tests ran first.
        try TestDatabase.applyRoles(PostgresConnection(conninfo: try TestDatabase.migrated()))
        let conninfo = try cluster.createDatabase("schema_file_" + String(UInt32.random(in: 0...UInt32.max), radix: 16))
        try TestDatabase.migrate(conninfo)
        // With the roles of sql/roles.sql, so that row-level security and its policies are part
        // of what is dumped whatever other tests made of the cluster's roles before.
        try TestDatabase.applyRoles(PostgresConnection(conninfo: conninfo))
        let dumped = try SchemaDump.text(cluster: cluster, conninfo: conninfo)
        if ProcessInfo.processInfo.environment["PGPUSH_WRITE_SCHEMA"] == "1" {
            try dumped.write(toFile: Self.path, atomically: true, encoding: .utf8)
        }
        let committed = (try? String(contentsOfFile: Self.path, encoding: .utf8)) ?? ""
        let actual = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-schema-\(getpid()).sql").path
        if committed != dumped { try? dumped.write(toFile: actual, atomically: true, encoding: .utf8) }
        #expect(committed == dumped, """
            sql/schema.sql is not what the migrations produce (what they produce: \(actual)); regenerate it with \
            PGPUSH_WRITE_SCHEMA=1 swift test --filter SchemaFileTests
            """)
        #expect(dumped.contains("CREATE FUNCTION pgpush.claim(") && dumped.contains("CREATE TABLE pgpush.notifications ("))
    }
}

/// `pg_dump --schema-only` of the pgpush schema, without the lines that name the versions
/// of the server and of pg_dump (a patch release must not change the file) and the
/// `\restrict` lines of newer pg_dump releases, whose key is random on every run.
enum SchemaDump {
    static func text(cluster: EmbeddedPostgres, conninfo: String) throws -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-dump-\(UUID().uuidString).sql").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: cluster.binDirectory + "/pg_dump")
        process.arguments = ["--schema-only", "--schema=pgpush", "--no-owner", "--no-privileges", "--file=\(output)", conninfo]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestSetupError("pg_dump exited with \(process.terminationStatus)") }
        let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let kept = lines.filter {
            !$0.hasPrefix("-- Dumped from database version") && !$0.hasPrefix("-- Dumped by pg_dump version")
                && !$0.hasPrefix("\\restrict ") && !$0.hasPrefix("\\unrestrict ")
        }
        return """
            -- The pgpush schema as sql/0*.sql and sql/roles.sql leave it: pg_dump --schema-only
            -- --schema=pgpush --no-owner --no-privileges of a freshly migrated database (the grants
            -- of each role are in sql/007_per_app_access.sql and the migrations that extend it).
            -- Generated; never edited by hand. The migrations are what changes a database; this
            -- file is for reading, and a test checks that it matches them
            -- (Tests/PushQueueTests/SchemaFileTests.swift).

            """ + kept.joined(separator: "\n")
    }
}
