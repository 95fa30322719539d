import Foundation
import Postgres

/// What PostgreSQL did for a stretch of a run, and per notification: WAL, rows written,
/// commits and the server's CPU. One database server's capacity is decided by these, not
/// by the worker.
package struct DatabaseCost: Sendable, Codable, Equatable {
    /// What the figures are divided by: rows inserted (insert phase) or rows finished.
    package var notifications: Int
    package var seconds: Double
    /// pg_current_wal_insert_lsn() difference: every WAL byte inserted, written out yet or not.
    package var walBytes: Int64
    /// pg_stat_wal: WAL records, and full-page images among them.
    package var walRecords: Int64
    package var walFullPageImages: Int64
    /// pg_stat_user_tables, summed over every table of the database (notifications, workers,
    /// app_health, delivery_errors, ...).
    package var rowsInserted: Int64
    package var rowsUpdated: Int64
    package var hotUpdates: Int64
    package var rowsDeleted: Int64
    /// The same for pgpush.notifications alone.
    package var notificationUpdates: Int64
    package var notificationHOTUpdates: Int64
    /// pg_stat_database.xact_commit / xact_rollback, less the bench's own queries.
    package var commits: Int64
    package var rollbacks: Int64
    /// CPU time of every process of the cluster (postmaster, backends, background
    /// processes, autovacuum), less the bench's own observing session. nil when the server
    /// is not the embedded cluster (DATABASE_URL).
    package var serverCPUSeconds: Double?

    // Per notification (stored so that --json has them too).
    package var walBytesPerNotification: Double
    package var rowsWrittenPerNotification: Double
    package var commitsPerNotification: Double
    package var serverCPUMicrosecondsPerNotification: Double?
    /// HOT updates / updates over every table, and for pgpush.notifications alone (nil: no updates).
    package var hotShare: Double?
    package var notificationHOTShare: Double?

    init(notifications: Int, seconds: Double, walBytes: Int64, walRecords: Int64, walFullPageImages: Int64,
         rowsInserted: Int64, rowsUpdated: Int64, hotUpdates: Int64, rowsDeleted: Int64, notificationUpdates: Int64,
         notificationHOTUpdates: Int64, commits: Int64, rollbacks: Int64, serverCPUSeconds: Double?) {
        self.notifications = notifications
        self.seconds = seconds
        self.walBytes = walBytes
        self.walRecords = walRecords
        self.walFullPageImages = walFullPageImages
        self.rowsInserted = rowsInserted
        self.rowsUpdated = rowsUpdated
        self.hotUpdates = hotUpdates
        self.rowsDeleted = rowsDeleted
        self.notificationUpdates = notificationUpdates
        self.notificationHOTUpdates = notificationHOTUpdates
        self.commits = commits
        self.rollbacks = rollbacks
        self.serverCPUSeconds = serverCPUSeconds
        let count = Double(max(notifications, 1))
        walBytesPerNotification = Double(walBytes) / count
        rowsWrittenPerNotification = Double(rowsInserted + rowsUpdated + rowsDeleted) / count
        commitsPerNotification = Double(commits) / count
        serverCPUMicrosecondsPerNotification = serverCPUSeconds.map { $0 * 1e6 / count }
        hotShare = rowsUpdated > 0 ? Double(hotUpdates) / Double(rowsUpdated) : nil
        notificationHOTShare = notificationUpdates > 0 ? Double(notificationHOTUpdates) / Double(notificationUpdates) : nil
    }

    /// The server's CPUs busy on average over the stretch.
    package var serverBusyCPUs: Double? {
        serverCPUSeconds.map { $0 / max(seconds, 1e-6) }
    }

    /// One line for the table: WAL, rows, commits, CPU per notification.
    var summary: String {
        var text = String(format: "WAL %.2f kB, rows %.2f (ins %.2f upd %.2f del %.2f; HOT %@ of upd.), commits %.3f",
                          walBytesPerNotification / 1000, rowsWrittenPerNotification,
                          Double(rowsInserted) / Double(max(notifications, 1)), Double(rowsUpdated) / Double(max(notifications, 1)),
                          Double(rowsDeleted) / Double(max(notifications, 1)),
                          hotShare.map { String(format: "%.0f%%", $0 * 100) } ?? "n/a", commitsPerNotification)
        if let cpu = serverCPUMicrosecondsPerNotification { text += String(format: ", PG CPU %.1f µs", cpu) }
        return text
    }

    /// What must hold for any stretch in which notifications were written.
    func problems(_ label: String) -> [String] {
        var problems: [String] = []
        if notifications > 0 {
            if walBytes <= 0 { problems.append("\(label): no WAL written for \(notifications) notifications") }
            if commits <= 0 { problems.append("\(label): no commits for \(notifications) notifications") }
            if rowsInserted + rowsUpdated + rowsDeleted <= 0 { problems.append("\(label): no rows written") }
            if let cpu = serverCPUSeconds, cpu <= 0 { problems.append("\(label): the server used no CPU") }
        }
        if hotUpdates > rowsUpdated || notificationHOTUpdates > notificationUpdates {
            problems.append("\(label): more HOT updates than updates")
        }
        if walFullPageImages > walRecords { problems.append("\(label): more full-page images than WAL records") }
        return problems
    }
}

/// CPU time of processes from /proc.
enum ProcessCPU {
    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// The fields of /proc/PID/stat after the command name: [0] is the state (field 3).
    private static func statFields(_ pid: pid_t) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    /// user + system CPU of a process, all its threads (ended ones too), in clock ticks'
    /// resolution (10 ms). `children`: add its reaped children's (cutime + cstime).
    static func seconds(of pid: pid_t, children: Bool = false) -> Double? {
        guard let fields = statFields(pid), fields.count > 14 else { return nil }
        // utime, stime, cutime, cstime are fields 14 to 17.
        let indices = children ? 11...14 : 11...12
        let ticks = indices.compactMap { Double(fields[$0]) }.reduce(0, +)
        return ticks / ticksPerSecond
    }

    /// CPU of a single-threaded process (a PostgreSQL backend), to the nanosecond from
    /// /proc/PID/schedstat; from /proc/PID/stat when schedstat is missing.
    static func preciseSeconds(of pid: pid_t) -> Double? {
        if let text = try? String(contentsOfFile: "/proc/\(pid)/schedstat", encoding: .utf8),
           let first = text.split(separator: " ").first, let nanoseconds = Double(first) {
            return nanoseconds / 1e9
        }
        return seconds(of: pid)
    }

    /// A cluster's postmaster: the first line of its data directory's postmaster.pid.
    static func postmasterPID(dataDirectory: String) -> pid_t? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8),
              let first = text.split(separator: "\n").first else { return nil }
        return pid_t(first.trimmingCharacters(in: .whitespaces))
    }

    /// Every process whose parent is `parent`.
    static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { pid in
            guard let fields = statFields(pid), fields.count > 1 else { return false }
            return pid_t(fields[1]) == parent
        }
    }

    /// A PostgreSQL cluster's CPU so far: the postmaster's own and its reaped children's
    /// (backends and workers that ended), plus every live child's to the nanosecond.
    ///
    /// A child reaped between reading the postmaster's counters and reading the child would
    /// be counted nowhere (or twice, the other way round), and sessions end in numbers when
    /// a worker stops: so the children are listed before and after, and the reading is
    /// taken again until no child came or went in between.
    static func cluster(postmaster: pid_t) -> Double? {
        for _ in 0..<100 {
            let before = Set(children(of: postmaster))
            var live = 0.0, complete = true
            for child in before {
                guard let seconds = preciseSeconds(of: child) else { complete = false; break }
                live += seconds
            }
            guard let own = seconds(of: postmaster, children: true) else { return nil }
            if complete && Set(children(of: postmaster)) == before { return own + live }
            usleep(5_000)
        }
        return nil
    }
}

/// The counters at one moment, read by `CostMeter.snapshot()`.
struct DatabaseSnapshot {
    var at: ContinuousClock.Instant
    var walBytes: Int64
    var walRecords: Int64
    var walFullPageImages: Int64
    var rowsInserted: Int64
    var rowsUpdated: Int64
    var hotUpdates: Int64
    var rowsDeleted: Int64
    var notificationUpdates: Int64
    var notificationHOTUpdates: Int64
    var commits: Int64
    var rollbacks: Int64
    var serverCPUSeconds: Double?
    /// The observing session's own backend.
    var observerCPUSeconds: Double?
    /// The bench's own transactions in this database included in `commits`.
    var ownTransactions: Int
}

/// Reads a scenario database's cost counters through a connection of its own (the
/// "observer", which also runs the scenario's polls), and takes care that the deltas are
/// complete: statistics are flushed by each backend on its own schedule (at most once a
/// second while busy, after 10 s idle, and always when the session ends), so a closing
/// snapshot is taken only once every other session of the database has ended (or, for the
/// bench's own sessions, after `pg_stat_force_next_flush()`); the bench's own transactions
/// and its observing backend's CPU are counted and taken off.
final class CostMeter {
    let connection: PostgresConnection
    private let postmaster: pid_t?
    /// Transactions the bench ran in this database (polls, flushes, snapshots) so far.
    private(set) var ownTransactions = 0

    /// `postmaster`: the cluster whose processes' CPU is counted (nil: none is). Waits for
    /// sessions still connected (the migration's, closing) to end, so that what they did is
    /// not counted in the first stretch measured.
    init(conninfo: String, postmaster: pid_t?) throws {
        connection = try PostgresConnection(conninfo: conninfo)
        self.postmaster = postmaster
        try waitForOtherSessions()
    }

    convenience init(conninfo: String, database: BenchDatabase) throws {
        try self.init(conninfo: conninfo, postmaster: database.postmasterPID)
    }

    /// One of the bench's own queries on the observing connection (a poll): one transaction
    /// that is not the work measured.
    func poll<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        defer { ownTransactions += 1 }
        return try body(connection)
    }

    /// Flushes the session's pending statistics at the end of this statement's transaction.
    /// It reads a relation on purpose: PostgreSQL 15 flushes nothing, not even its count of
    /// commits, after a transaction that left no relation statistics pending, so a bare
    /// `SELECT pg_stat_force_next_flush()` could leave the last commits unflushed (a 45,000-row
    /// insert that took over a second went uncounted: "no commits").
    static let flushStatistics = "SELECT pg_stat_force_next_flush() FROM pg_class LIMIT 1"

    /// Flushes another of the bench's sessions' pending statistics (an inserter's) now.
    func flush(_ other: PostgresConnection) throws {
        _ = try other.query(Self.flushStatistics)
        ownTransactions += 1
    }

    /// Waits until no client session other than the observer (and `except`) is connected to
    /// the database: a session's statistics are flushed before it leaves pg_stat_activity.
    func waitForOtherSessions(except: [Int32] = [], timeout: Duration = .seconds(30)) throws {
        let deadline = ContinuousClock.now + timeout
        let excluded = ([connection.backendPID] + except).map(String.init).joined(separator: ",")
        while try poll({ try $0.query("""
            SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND backend_type = 'client backend' AND pid NOT IN (\(excluded))
            """).int(0, 0) ?? 0 }) > 0 {
            guard ContinuousClock.now < deadline else { throw BenchError("sessions still connected after \(timeout)") }
            usleep(20_000)
        }
    }

    /// The counters now, with this session's own statistics flushed first.
    func snapshot() throws -> DatabaseSnapshot {
        _ = try connection.query(Self.flushStatistics)
        ownTransactions += 1
        let own = ownTransactions
        let server = postmaster.flatMap { ProcessCPU.cluster(postmaster: $0) }
        let observer = postmaster == nil ? nil : ProcessCPU.preciseSeconds(of: connection.backendPID)
        let result = try connection.query("""
            WITH notifications AS (SELECT relid FROM pg_partition_tree('pgpush.notifications'))  -- each partition
            SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint, w.wal_records, w.wal_fpi,
                   t.ins, t.upd, t.hot, t.del, t.nupd, t.nhot, d.xact_commit, d.xact_rollback
              FROM pg_stat_wal w,
                   (SELECT coalesce(sum(n_tup_ins), 0)::bigint AS ins, coalesce(sum(n_tup_upd), 0)::bigint AS upd,
                           coalesce(sum(n_tup_hot_upd), 0)::bigint AS hot, coalesce(sum(n_tup_del), 0)::bigint AS del,
                           coalesce(sum(n_tup_upd) FILTER (WHERE relid IN (SELECT relid FROM notifications)), 0)::bigint AS nupd,
                           coalesce(sum(n_tup_hot_upd) FILTER (WHERE relid IN (SELECT relid FROM notifications)), 0)::bigint AS nhot
                      FROM pg_stat_user_tables) t,
                   pg_stat_database d
             WHERE d.datname = current_database()
            """)
        ownTransactions += 1
        func value(_ column: Int) -> Int64 { result.int64(0, column) ?? 0 }
        return DatabaseSnapshot(
            at: .now, walBytes: value(0), walRecords: value(1), walFullPageImages: value(2), rowsInserted: value(3),
            rowsUpdated: value(4), hotUpdates: value(5), rowsDeleted: value(6), notificationUpdates: value(7),
            notificationHOTUpdates: value(8), commits: value(9), rollbacks: value(10), serverCPUSeconds: server,
            observerCPUSeconds: observer, ownTransactions: own)
    }

    /// The cost between two snapshots. `countObserver`: the observing session did the work
    /// measured (the insert phase) rather than only watched.
    static func cost(from start: DatabaseSnapshot, to end: DatabaseSnapshot, notifications: Int,
                     countObserver: Bool = false) -> DatabaseCost {
        var server: Double?
        if let first = start.serverCPUSeconds, let last = end.serverCPUSeconds {
            server = last - first
            if !countObserver, let observerStart = start.observerCPUSeconds, let observerEnd = end.observerCPUSeconds {
                server = max(0, last - first - (observerEnd - observerStart))
            }
        }
        return DatabaseCost(
            notifications: notifications, seconds: Double((end.at - start.at) / .microseconds(1)) / 1e6,
            walBytes: end.walBytes - start.walBytes, walRecords: end.walRecords - start.walRecords,
            walFullPageImages: end.walFullPageImages - start.walFullPageImages,
            rowsInserted: end.rowsInserted - start.rowsInserted, rowsUpdated: end.rowsUpdated - start.rowsUpdated,
            hotUpdates: end.hotUpdates - start.hotUpdates, rowsDeleted: end.rowsDeleted - start.rowsDeleted,
            notificationUpdates: end.notificationUpdates - start.notificationUpdates,
            notificationHOTUpdates: end.notificationHOTUpdates - start.notificationHOTUpdates,
            commits: end.commits - start.commits - Int64(end.ownTransactions - start.ownTransactions),
            rollbacks: end.rollbacks - start.rollbacks, serverCPUSeconds: server)
    }
}
