import EmbeddedPostgres
import Foundation
import Postgres
import PushQueue

/// Where the scenarios' rows live: a throwaway embedded cluster with a fresh
/// database per scenario, or the database named by DATABASE_URL, emptied
/// before each scenario (only when the caller said that is allowed).
package final class BenchDatabase {
    private let cluster: EmbeddedPostgres?
    /// In front of the cluster when the worker is to go through a pooler.
    private let pooler: EmbeddedPgBouncer?
    private let externalURL: String?
    private let migrations: [Migration]
    /// The migrations' folder (a scenario may read an older version of a function from it).
    package let sqlDirectory: String
    private var created: [String] = []

    package init(externalURL: String?, sqlDirectory: String, pooled: Bool = false) throws {
        self.sqlDirectory = sqlDirectory
        migrations = try Migration.load(directory: sqlDirectory)
        self.externalURL = externalURL
        let cluster = externalURL == nil ? try EmbeddedPostgres.start() : nil
        self.cluster = cluster
        guard !pooled else {
            guard let cluster else { throw BenchError("--pgbouncer needs the embedded cluster (no DATABASE_URL)") }
            pooler = try EmbeddedPgBouncer.start(in: cluster)
            return
        }
        pooler = nil
    }

    /// What a worker connects with for the database of `conninfo`: through the pooler when
    /// there is one (and then `listen`, a session connection for LISTEN), else `conninfo`.
    package func workerURLs(_ conninfo: String) -> (database: String, listen: String?) {
        guard let pooler, let cluster, let name = Self.databaseName(conninfo) else { return (conninfo, nil) }
        return (pooler.conninfo(database: name), cluster.conninfo(database: name))
    }

    package var isPooled: Bool { pooler != nil }

    /// Ends the pooler's server sessions to the database of `conninfo`, once the worker has
    /// stopped: a pooled session stays connected, and its statistics would wait for it.
    package func releasePooledSessions(_ conninfo: String) throws {
        guard let pooler, let name = Self.databaseName(conninfo) else { return }
        try pooler.closeServerConnections(database: name)
    }

    package var description: String {
        if let cluster { return "embedded PostgreSQL (fsync=off, synchronous_commit=off) in \(cluster.directory)" }
        return "DATABASE_URL"
    }

    /// A migrated database with no notifications (migrations up to `upToVersion` only, when
    /// given: embedded cluster only); returns its connection string.
    package func fresh(_ name: String, upToVersion: Int? = nil) throws -> String {
        let runner = MigrationRunner(migrations: migrations.filter { $0.version <= upToVersion ?? .max })
        if let cluster {
            let database = "bench_\(name)_\(created.count)"
            let conninfo = try cluster.createDatabase(database)
            created.append(database)
            try runner.migrate(PostgresConnection(conninfo: conninfo))
            return conninfo
        }
        guard upToVersion == nil else { throw BenchError("an older schema needs the embedded cluster (no DATABASE_URL)") }
        let conninfo = externalURL ?? ""
        let connection = try PostgresConnection(conninfo: conninfo)
        try runner.migrate(connection)
        try connection.execute(script: """
            TRUNCATE pgpush.notifications, pgpush.delivery_errors, pgpush.invalid_tokens, pgpush.workers, pgpush.app_health
            """)
        return conninfo
    }

    /// Applies the migrations not yet applied to the database of `conninfo`.
    package func migrate(_ conninfo: String) throws {
        try MigrationRunner(migrations: migrations).migrate(PostgresConnection(conninfo: conninfo))
    }

    /// Drops a scenario's database (embedded only) so a long run does not fill the disk.
    package func discard(_ conninfo: String) {
        guard let cluster, let name = Self.databaseName(conninfo) else { return }
        try? PostgresConnection(conninfo: cluster.conninfo()).execute(script: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// pgbench of the embedded cluster's PostgreSQL; nil for DATABASE_URL.
    package var pgbench: String? {
        cluster.map { $0.binDirectory + "/pgbench" }.flatMap { FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil }
    }

    /// The embedded cluster's postmaster (the first line of its data directory's postmaster.pid);
    /// nil for DATABASE_URL, whose server may be on another machine.
    package var postmasterPID: pid_t? {
        cluster.flatMap { ProcessCPU.postmasterPID(dataDirectory: $0.dataDirectory) }
    }

    /// The `dbname=` of a key/value connection string, as `fresh` hands them out.
    private static func databaseName(_ conninfo: String) -> String? {
        conninfo.split(separator: " ").first(where: { $0.hasPrefix("dbname=") }).map { String($0.dropFirst(7)) }
    }

    package func stop() {
        pooler?.stop()
        cluster?.stop()
    }
}
