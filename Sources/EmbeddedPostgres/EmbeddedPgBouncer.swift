import Foundation
import Postgres
import Spawn

/// A throwaway PgBouncer in transaction pooling mode in front of an embedded cluster,
/// as production often runs PostgreSQL: each transaction may run on a different server
/// connection, and nothing a session sets survives its transaction.
///
/// It listens on a Unix socket in its own folder only. PgBouncer refuses to run as
/// root; it then runs as the cluster's OS user. Like the cluster, a watchdog stops it
/// if this process dies without calling `stop()`.
package final class EmbeddedPgBouncer: Sendable {
    package let directory: String
    package let port: Int
    private let cluster: EmbeddedPostgres
    private let watchdogPID: Int32

    /// Where Debian installs it (package `pgbouncer`).
    package static let binary = "/usr/sbin/pgbouncer"
    package static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: binary) }

    private var authFile: String { directory + "/users.txt" }
    private var pidFile: String { directory + "/pgbouncer.pid" }
    package var logFile: String { directory + "/pgbouncer.log" }

    /// `conninfo` of `cluster` rewritten to reach the same database and user through the pooler.
    package func conninfo(database: String, user: String = "pgpush") -> String {
        "host=\(directory) port=\(port) user=\(user) dbname=\(database)"
    }

    /// Starts PgBouncer for every database of `cluster`, letting user `pgpush` in.
    package static func start(in front: EmbeddedPostgres) throws -> EmbeddedPgBouncer {
        guard isInstalled else { throw EmbeddedPostgresError("pgbouncer is not installed (Debian package pgbouncer)") }
        var template = Array("/tmp/pgpush-pgbouncer-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else {
            throw EmbeddedPostgresError("could not create a temporary folder: errno \(errno)")
        }
        let directory = String(cString: created)
        let port = Int.random(in: 20_000...60_000)
        // Transaction pooling; no server_reset_query (PgBouncer runs none in this mode anyway);
        // pools large enough for every test of a run at once. While the cluster is down a
        // query waits for a server connection; after 10 s (not the default 120) it fails, so
        // an outage reaches the worker as an error within a test's patience. A server
        // connection idle for 5 s is closed: every test has a database (a pool) of its own,
        // and pools kept for the default 10 minutes filled the cluster's connection slots.
        let settings = """
            [databases]
            * = host=\(front.directory) port=\(front.port)

            [pgbouncer]
            listen_addr =
            listen_port = \(port)
            unix_socket_dir = \(directory)
            auth_type = trust
            auth_file = \(directory)/users.txt
            admin_users = pgpush
            pool_mode = transaction
            max_client_conn = 2000
            default_pool_size = 40
            max_db_connections = 0
            server_idle_timeout = 5
            server_login_retry = 1
            query_wait_timeout = 10
            logfile = \(directory)/pgbouncer.log
            pidfile = \(directory)/pgbouncer.pid
            """
        try settings.write(toFile: directory + "/pgbouncer.ini", atomically: true, encoding: .utf8)
        try "\"pgpush\" \"\"\n".write(toFile: directory + "/users.txt", atomically: true, encoding: .utf8)
        if let user = front.runAsUser { try run("/bin/chown", ["-R", user, directory]) }
        let start = (front.runAsUser.map { "/usr/sbin/runuser -u \($0) -- " } ?? "") + "\(binary) -d -q \(directory)/pgbouncer.ini"
        try run("/bin/sh", ["-c", start])
        let watchdog = try Spawn.start("/bin/sh", ["-c", """
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            kill -INT "$(cat \(directory)/pgbouncer.pid)" 2>/dev/null; sleep 1; rm -rf \(directory)
            """], environment: nil, output: "/dev/null")
        let pooler = EmbeddedPgBouncer(directory: directory, port: port, cluster: front, watchdogPID: watchdog)
        try pooler.waitUntilAccepting(user: "pgpush")
        return pooler
    }

    private init(directory: String, port: Int, cluster: EmbeddedPostgres, watchdogPID: Int32) {
        self.directory = directory
        self.port = port
        self.cluster = cluster
        self.watchdogPID = watchdogPID
    }

    /// Lets login role `user` through (PgBouncer checks names against its user list even
    /// when it trusts them) and has PgBouncer read the list again.
    package func allow(user: String) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: authFile))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("\"\(user)\" \"\"\n".utf8))
        guard let pid = pgbouncerPID else { throw EmbeddedPostgresError("pgbouncer is not running") }
        kill(pid, SIGHUP)
        // The reload happens on PgBouncer's own time.
        try waitUntilAccepting(user: user)
    }

    /// Closes every server connection PgBouncer holds to `database` (its sessions then end,
    /// and PostgreSQL counts what they did), and lets clients in again.
    package func closeServerConnections(database: String) throws {
        let console = try PostgresConnection(conninfo: conninfo(database: "pgbouncer"))
        try console.execute(script: "KILL \(database)")
        try console.execute(script: "RESUME \(database)")
    }

    /// Waits until `user` gets in (after a start or a reload).
    private func waitUntilAccepting(user: String) throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while (try? PostgresConnection(conninfo: conninfo(database: "postgres", user: user))) == nil {
            guard ContinuousClock.now < deadline else {
                let log = (try? String(contentsOfFile: logFile, encoding: .utf8))?.split(separator: "\n").suffix(5).joined(separator: "\n")
                throw EmbeddedPostgresError("pgbouncer does not let \(user) in: \(log ?? "no log")")
            }
            usleep(20_000)
        }
    }

    /// Stops PgBouncer and removes its folder.
    package func stop() {
        if let pid = pgbouncerPID {
            kill(pid, SIGINT)
            for _ in 0..<100 where kill(pid, 0) == 0 { usleep(50_000) }
        }
        kill(watchdogPID, SIGKILL)
        var status: Int32 = 0
        waitpid(watchdogPID, &status, 0)
        try? FileManager.default.removeItem(atPath: directory)
    }

    private var pgbouncerPID: pid_t? {
        (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    private static func run(_ executable: String, _ arguments: [String]) throws {
        let (status, output) = try ChildProcess.runToCompletion(executable, arguments)
        guard status == 0 else { throw EmbeddedPostgresError("\(executable) \(arguments.joined(separator: " ")) exited \(status): \(output)") }
    }
}
