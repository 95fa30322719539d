import Foundation
import Postgres
import Spawn

/// A throwaway PostgreSQL cluster in a temporary folder, for tests and `pgpush demo`.
///
/// The server listens on a Unix socket inside its own folder only, so clusters
/// never compete for TCP ports. PostgreSQL refuses to run as root; when pgpush
/// runs as root the server binaries run as the `postgres` OS user. A watchdog
/// process stops the server and removes the folder if this process dies
/// without calling `stop()`, so a crashed test run leaves nothing behind.
package final class EmbeddedPostgres: Sendable {
    package let directory: String
    package let port: Int
    /// The folder of the server's programs (initdb, pg_ctl, pgbench).
    package let binDirectory: String
    /// The OS user the server runs as (`postgres` when this process is root), nil: this one.
    package let runAsUser: String?
    private let watchdogPID: Int32
    private let settings: [String: String]

    package var dataDirectory: String { directory + "/data" }
    package var logFile: String { directory + "/server.log" }

    /// Connection string for `database` (default `postgres`) as the superuser `pgpush`;
    /// `port` for a server started on another port (see `startServer(port:)`).
    package func conninfo(database: String = "postgres", port: Int? = nil) -> String {
        "host=\(directory) port=\(port ?? self.port) user=pgpush dbname=\(database)"
    }

    /// Creates, initializes and starts a new cluster. `settings` are server settings
    /// (`-c name=value`) that replace or add to the defaults of `startServer`.
    package static func start(settings: [String: String] = [:]) throws -> EmbeddedPostgres {
        try create(settings: settings) { bin, runAs, directory in
            try runServerCommand(bin + "/initdb", [
                "-D", directory + "/data", "-U", "pgpush", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync",
            ], as: runAs, log: directory + "/initdb.log")
        }
    }

    /// Creates a streaming standby of `primary` with `pg_basebackup -R` over the primary's
    /// Unix socket (the primary must allow replication connections, which initdb's
    /// pg_hba.conf does for local sockets), and starts it in its own folder and port.
    package static func startStandby(of primary: EmbeddedPostgres, settings: [String: String] = [:]) throws -> EmbeddedPostgres {
        try create(settings: settings) { bin, runAs, directory in
            try runServerCommand(bin + "/pg_basebackup", [
                "-D", directory + "/data", "-h", primary.directory, "-p", String(primary.port), "-U", "pgpush",
                "-R", "-X", "stream", "-c", "fast", "--no-sync",
            ], as: runAs, log: directory + "/pg_basebackup.log")
        }
    }

    /// A new folder, `makeDataDirectory` filling its `data`, a watchdog, and the server started.
    private static func create(settings: [String: String],
                               makeDataDirectory: (_ bin: String, _ runAs: String?, _ directory: String) throws -> Void)
        throws -> EmbeddedPostgres {
        let bin = try findServerBinaries()
        let runAs: String? = getuid() == 0 ? "postgres" : nil
        if let runAs { try ensureSystemUser(runAs) }

        var template = Array("/tmp/pgpush-pg-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else {
            throw EmbeddedPostgresError("could not create a temporary folder: errno \(errno)")
        }
        let directory = String(cString: created)
        if let runAs {
            try run("/bin/chown", [runAs, directory])
        }
        let port = Int.random(in: 20_000...60_000)
        do {
            try makeDataDirectory(bin, runAs, directory)
            let watchdog = try startWatchdog(directory: directory, bin: bin, runAs: runAs)
            let cluster = EmbeddedPostgres(directory: directory, port: port, binDirectory: bin, runAsUser: runAs,
                                           watchdogPID: watchdog, settings: settings)
            try cluster.startServer()
            return cluster
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    private init(directory: String, port: Int, binDirectory: String, runAsUser: String?, watchdogPID: Int32,
                 settings: [String: String]) {
        self.directory = directory
        self.port = port
        self.binDirectory = binDirectory
        self.runAsUser = runAsUser
        self.watchdogPID = watchdogPID
        self.settings = settings
    }

    /// fsync and synchronous_commit off: a throwaway cluster trades durability for speed
    /// (a cluster started with other `settings` may take it back).
    static let defaultSettings = [
        "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "500",
    ]

    /// Starts the server of an initialized cluster (again, after `stopServer`). `port`
    /// other than the cluster's own puts the server on another socket in the same folder,
    /// where clients of `conninfo()` do not find it.
    package func startServer(port: Int? = nil) throws {
        let merged = Self.defaultSettings.merging(settings) { $1 }
        let options = "-p \(port ?? self.port) -k \(directory) -c listen_addresses= "
            + merged.sorted { $0.key < $1.key }.map { "-c \($0.key)=\($0.value)" }.joined(separator: " ")
        try Self.runServerCommand(binDirectory + "/pg_ctl", [
            "-D", dataDirectory, "-l", logFile, "-w", "-t", "60", "-o", options, "start",
        ], as: runAsUser, log: directory + "/pg_ctl.log")
    }

    /// `pg_ctl promote` of a standby; returns once the signal is sent (wait for the end of
    /// recovery by asking the server `pg_is_in_recovery()`).
    package func promote() throws {
        try Self.runServerCommand(binDirectory + "/pg_ctl", ["-D", dataDirectory, "-W", "promote"],
                                  as: runAsUser, log: directory + "/pg_ctl.log")
    }

    /// Stops the server but keeps the cluster (to test outages and restarts). `wait: false`
    /// returns once the server has been told; `isServerRunning` says when it is gone.
    package func stopServer(mode: String = "fast", wait: Bool = true) throws {
        try Self.runServerCommand(binDirectory + "/pg_ctl", ["-D", dataDirectory, "-m", mode, wait ? "-w" : "-W", "stop"],
                                  as: runAsUser, log: directory + "/pg_ctl.log")
    }

    /// Whether the server's lock file `postmaster.pid` exists: it goes when the server has stopped.
    package var isServerRunning: Bool { FileManager.default.fileExists(atPath: dataDirectory + "/postmaster.pid") }

    /// `pg_ctl restart -m fast`: every session is terminated, the server comes back on the same socket.
    package func restartServer() throws {
        try stopServer()
        try startServer()
    }

    /// Stops the server and removes the cluster's folder.
    package func stop() {
        try? stopServer()
        kill(watchdogPID, SIGKILL)
        var status: Int32 = 0
        waitpid(watchdogPID, &status, 0)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Creates an empty database and returns its connection string. Names are
    /// `[a-z0-9_]` only, so the identifier needs no quoting.
    /// `template`: a database of this cluster to copy (no session may be connected to it).
    package func createDatabase(_ name: String, template: String? = nil) throws -> String {
        for name in [name] + (template.map { [$0] } ?? []) {
            guard !name.isEmpty, name.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 }) else {
                throw EmbeddedPostgresError("database names are [a-z0-9_]: \(name)")
            }
        }
        let admin = try PostgresConnection(conninfo: conninfo())
        try admin.execute(script: "CREATE DATABASE \(name)" + (template.map { " TEMPLATE \($0)" } ?? ""))
        return conninfo(database: name)
    }

    // MARK: Processes

    private static func findServerBinaries() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        if let configured = environment["PGPUSH_PG_BIN"] { return configured }
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        let newest = versions.compactMap(Int.init).sorted().last
        if let newest, FileManager.default.isExecutableFile(atPath: "\(root)/\(newest)/bin/initdb") {
            return "\(root)/\(newest)/bin"
        }
        throw EmbeddedPostgresError(
            "PostgreSQL server binaries not found under \(root) (install them: apt-get install -y postgresql), "
                + "or set PGPUSH_PG_BIN to the folder holding initdb and pg_ctl")
    }

    private static func ensureSystemUser(_ user: String) throws {
        if getpwnam(user) != nil { return }
        try run("/usr/sbin/useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", user])
    }

    private static func runServerCommand(_ executable: String, _ arguments: [String], as user: String?, log: String) throws {
        if let user {
            try run("/usr/sbin/runuser", ["-u", user, "--", executable] + arguments, log: log)
        } else {
            try run(executable, arguments, log: log)
        }
    }

    private static func run(_ executable: String, _ arguments: [String], log: String? = nil) throws {
        let pid = try spawn(executable, arguments, output: log ?? "/dev/null")
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw EmbeddedPostgresError("waitpid failed for \(executable): errno \(errno)") }
        }
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            let tail = log.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }?
                .split(separator: "\n").suffix(5).joined(separator: "\n") ?? ""
            let how = exited ? "exited with \(code)" : "was killed by signal \(status & 0x7f)"
            throw EmbeddedPostgresError("\(executable) \(how)\(tail.isEmpty ? "" : ":\n" + tail)")
        }
    }

    /// Starts `executable` with this process's environment, stdin from /dev/null and
    /// stdout + stderr appended to `output`.
    private static func spawn(_ executable: String, _ arguments: [String], output: String) throws -> pid_t {
        do {
            return try Spawn.start(executable, arguments, environment: nil, output: output, mode: .append, permissions: 0o666)
        } catch {
            throw EmbeddedPostgresError(error.description)
        }
    }

    /// A shell loop that outlives us only long enough to clean up after us.
    private static func startWatchdog(directory: String, bin: String, runAs: String?) throws -> Int32 {
        let stop = (runAs.map { "/usr/sbin/runuser -u \($0) -- " } ?? "")
            + "\(bin)/pg_ctl -D \(directory)/data -m immediate -w stop"
        let script = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \(stop) >/dev/null 2>&1; rm -rf \(directory)"
        return try spawn("/bin/sh", ["-c", script], output: "/dev/null")
    }
}

package struct EmbeddedPostgresError: Error, CustomStringConvertible, Sendable {
    package let description: String
    package init(_ description: String) { self.description = description }
}
