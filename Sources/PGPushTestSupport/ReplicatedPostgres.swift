import EmbeddedPostgres
import Foundation
import Locking
import Postgres

/// A primary and a streaming standby, both throwaway clusters on Unix sockets,
/// for failover tests: kill the primary, promote the standby, and see what the
/// clients of a multi-host connection string make of it.
///
/// Unlike the single embedded cluster, both servers keep PostgreSQL's durable
/// defaults (fsync, full-page writes, synchronous_commit on): the pair exists to
/// test what a commit acknowledgement promises, and the settings must not weaken
/// it. `.synchronous` names the standby in `synchronous_standby_names`, so a
/// commit returns only once the standby has flushed it; `.asynchronous` leaves the
/// list empty, so the standby trails the primary by whatever is still on its way.
package final class ReplicatedPostgres: Sendable {
    package enum Replication: String, Sendable {
        case synchronous, asynchronous
    }

    /// The standby's `cluster_name`, which its WAL receiver uses as application_name.
    package static let standbyName = "pgpush_standby"

    package let replication: Replication
    package let primary: EmbeddedPostgres
    package let standby: EmbeddedPostgres

    /// Starts the primary, checks that it takes replication connections on its socket,
    /// takes a base backup for the standby, starts it, and waits until it streams
    /// (and, in synchronous mode, is the synchronous standby).
    package static func start(_ replication: Replication) async throws -> ReplicatedPostgres {
        var settings = [
            "fsync": "on", "full_page_writes": "on", "synchronous_commit": "on",
            "wal_level": "replica", "max_wal_senders": "4", "cluster_name": "pgpush_primary",
        ]
        if replication == .synchronous { settings["synchronous_standby_names"] = standbyName }
        let primary = try EmbeddedPostgres.start(settings: settings)
        do {
            try allowLocalReplication(primary)
            // The standby takes no synchronous_standby_names: once promoted it has no standby
            // of its own, and with one named every commit would wait for it forever.
            settings["synchronous_standby_names"] = nil
            settings["cluster_name"] = standbyName
            let standby = try EmbeddedPostgres.startStandby(of: primary, settings: settings)
            let pair = ReplicatedPostgres(replication: replication, primary: primary, standby: standby)
            guard try await pair.waitUntilStreaming(timeout: .seconds(30)) else {
                pair.stop()
                throw ReplicatedPostgresError("the standby did not start streaming within 30 s")
            }
            return pair
        } catch {
            primary.stop()
            throw error
        }
    }

    private init(replication: Replication, primary: EmbeddedPostgres, standby: EmbeddedPostgres) {
        self.replication = replication
        self.primary = primary
        self.standby = standby
    }

    /// initdb's pg_hba.conf lets local sockets connect for replication with the
    /// authentication initdb was given (trust here); if a packaged template ever
    /// lacks the line, add it and reload.
    private static func allowLocalReplication(_ primary: EmbeddedPostgres) throws {
        let file = primary.dataDirectory + "/pg_hba.conf"
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let allowed = text.split(separator: "\n").contains { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            return fields.count >= 4 && fields[0] == "local" && fields[1] == "replication"
                && (fields[2] == "all" || fields[2] == "pgpush") && fields[3] == "trust"
        }
        guard !allowed else { return }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("local replication pgpush trust\n".utf8))
        try PostgresConnection(conninfo: primary.conninfo()).query("SELECT pg_reload_conf()")
    }

    /// A connection string naming both servers, primary first, that connects only to
    /// whichever accepts writes: `host=/dir1,/dir2 port=p1,p2 … target_session_attrs=read-write`.
    package func conninfo(database: String = "postgres") -> String {
        "host=\(primary.directory),\(standby.directory) port=\(primary.port),\(standby.port) user=pgpush "
            + "dbname=\(database) target_session_attrs=read-write"
    }

    /// Creates `name` on the primary (it reaches the standby by replication) and
    /// returns the multi-host connection string for it.
    package func createDatabase(_ name: String) throws -> String {
        _ = try primary.createDatabase(name)
        return conninfo(database: name)
    }

    /// Polls the primary's pg_stat_replication until the standby streams, and in
    /// synchronous mode until it is the synchronous standby.
    package func waitUntilStreaming(timeout: Duration) async throws -> Bool {
        let wanted = replication == .synchronous ? "sync" : "async"
        return try await eventually(reconnectingTo: primary.conninfo(), timeout: timeout) { connection in
            let rows = try connection.query(
                "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1", [Self.standbyName])
            return rows.rowCount == 1 && rows.string(0, 0) == "streaming" && rows.string(0, 1) == wanted
        }
    }

    /// The primary's WAL sender while `holdReplication` keeps it stopped.
    private let heldSender = Locked<pid_t?>(nil)

    /// Makes the standby fall behind: the primary's WAL sender is stopped (SIGSTOP), so
    /// nothing the primary commits from now on reaches the standby, as with a standby
    /// behind a slow link when the primary crashes. Only `killPrimary` ends it. For
    /// asynchronous replication only: a synchronous primary would stop committing.
    package func holdReplication() throws {
        precondition(replication == .asynchronous, "a held synchronous standby stops every commit")
        let connection = try PostgresConnection(conninfo: primary.conninfo())
        let result = try connection.query("SELECT pid FROM pg_stat_replication WHERE application_name = $1", [Self.standbyName])
        guard let pid = result.int(0, 0) else { throw ReplicatedPostgresError("no WAL sender serves the standby") }
        guard kill(pid_t(pid), SIGSTOP) == 0 else { throw ReplicatedPostgresError("SIGSTOP to the WAL sender: errno \(errno)") }
        heldSender.withLock { $0 = pid_t(pid) }
    }

    /// The primary dies as in a crash: `pg_ctl stop -m immediate` (SIGQUIT to every server
    /// process, no shutdown checkpoint, no more WAL sent). A held WAL sender cannot act on
    /// SIGQUIT while stopped, so it gets SIGKILL once the server has been told to stop
    /// (killed before, it would look like a crash that the server restarts from); it never
    /// sends what it held back. Returns when the server is gone.
    package func killPrimary() async throws {
        guard let held = heldSender.withLock({ $0 }) else {
            try primary.stopServer(mode: "immediate")
            return
        }
        try primary.stopServer(mode: "immediate", wait: false)
        kill(held, SIGKILL)
        heldSender.withLock { $0 = nil }
        let primary = primary
        guard try await eventually(timeout: .seconds(30), { !primary.isServerRunning }) else {
            throw ReplicatedPostgresError("the primary did not stop within 30 s of SIGQUIT")
        }
    }

    /// Waits until the standby no longer streams and has replayed all it ever will: after
    /// `killPrimary`, what it holds then is what it will ever hold. Replay can end short of
    /// what was received, for good: a WAL sender stopped mid-record leaves a partial record
    /// the standby never replays (receive LSN past replay LSN, seen in 1 of 2 runs), so
    /// "replay stopped moving for two seconds" counts as caught up too.
    package func waitUntilStandbyCaughtUp(timeout: Duration) async throws -> Bool {
        var lastReplay: (lsn: String, since: ContinuousClock.Instant)?
        return try await eventually(reconnectingTo: standby.conninfo(), timeout: timeout, every: .milliseconds(100)) { connection in
            let row = try connection.query("""
                SELECT NOT EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming'),
                       pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn(),
                       pg_last_wal_replay_lsn()::text
                """)
            guard row.bool(0, 0) == true else { return false }
            if row.bool(0, 1) == true { return true }
            let replay = row.string(0, 2) ?? ""
            let now = ContinuousClock.now
            guard let last = lastReplay, last.lsn == replay else {
                lastReplay = (replay, now)
                return false
            }
            return now - last.since >= .seconds(2)
        }
    }

    /// Asks the standby to leave recovery and become the primary (`pg_ctl promote`).
    package func promoteStandby() throws {
        try standby.promote()
    }

    /// Polls the standby until `pg_is_in_recovery()` is false: it takes writes.
    package func waitUntilPromoted(timeout: Duration) async throws -> Bool {
        try await eventually(reconnectingTo: standby.conninfo(), timeout: timeout) { connection in
            try connection.query("SELECT pg_is_in_recovery()").bool(0, 0) == false
        }
    }

    /// Stops both servers and removes their folders.
    package func stop() {
        standby.stop()
        primary.stop()
    }
}

/// The pair did not come up as asked (a standby that never streams).
package struct ReplicatedPostgresError: Error, CustomStringConvertible, Sendable {
    package let description: String
    init(_ description: String) { self.description = description }
}
