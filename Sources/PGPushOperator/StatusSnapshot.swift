import Foundation
import Postgres

/// What `pgpush status` shows, read only from the monitoring views and tables of
/// migrations 001–003, so it works against any pgpush database.
/// Encodes to the one JSON object of `pgpush status --json` (snake_case keys).
package struct StatusSnapshot: Sendable, Equatable, Codable {
    package struct QueueDepth: Sendable, Equatable, Codable {
        package var app: String
        package var due: Int
        package var scheduled: Int
        package var sending: Int
        package var oldestDueSeconds: Double
    }

    package struct ThroughputMinute: Sendable, Equatable, Codable {
        package var app: String
        /// Start of the minute, ISO-8601 UTC.
        package var minute: String
        package var delivered: Int
        package var failed: Int
        package var expired: Int
        package var cancelled: Int
    }

    package struct ErrorCount: Sendable, Equatable, Codable {
        package var app: String
        /// HTTP status; nil for local failures (no request was made, or no answer came).
        package var status: Int?
        package var reason: String
        package var errors: Int
        package var lastSeen: String

        // Written out so a missing status is `null` in the JSON, not an absent key.
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(app, forKey: .app)
            try container.encode(status, forKey: .status)
            try container.encode(reason, forKey: .reason)
            try container.encode(errors, forKey: .errors)
            try container.encode(lastSeen, forKey: .lastSeen)
        }
    }

    package struct InvalidTokenCount: Sendable, Equatable, Codable {
        package var app: String
        package var tokens: Int
    }

    package struct WorkerState: Sendable, Equatable, Codable {
        package var id: String
        package var host: String
        package var pid: Int
        package var version: String
        package var apps: [String]
        package var connections: Int
        package var alive: Bool
        package var secondsSinceHeartbeat: Double
        package var sent: Int
        package var delivered: Int
        package var failed: Int
        package var retried: Int
    }

    package struct AppState: Sendable, Equatable, Codable {
        package var app: String
        /// apns, fcm, …: the service this row is about.
        package var service: String = "apns"
        /// nil: the app's whole sending to the service; else the one apns-topic this row is about.
        package var topic: String? = nil
        package var healthy: Bool
        package var reason: String?
        package var since: String
        package var workerID: String?

        // "workerId" so snake_case conversion gives worker_id both ways.
        private enum CodingKeys: String, CodingKey {
            case app, service, topic, healthy, reason, since, workerID = "workerId"
        }

        package init(app: String, service: String = "apns", topic: String? = nil, healthy: Bool, reason: String?, since: String,
                    workerID: String?) {
            self.app = app
            self.service = service
            self.topic = topic
            self.healthy = healthy
            self.reason = reason
            self.since = since
            self.workerID = workerID
        }

        /// A snapshot written before services (0.4.0) has no `service`: its rows are APNs's.
        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(app: try container.decode(String.self, forKey: .app),
                      service: try container.decodeIfPresent(String.self, forKey: .service) ?? "apns",
                      topic: try container.decodeIfPresent(String.self, forKey: .topic),
                      healthy: try container.decode(Bool.self, forKey: .healthy),
                      reason: try container.decodeIfPresent(String.self, forKey: .reason),
                      since: try container.decode(String.self, forKey: .since),
                      workerID: try container.decodeIfPresent(String.self, forKey: .workerID))
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(app, forKey: .app)
            try container.encode(topic, forKey: .topic)
            try container.encode(healthy, forKey: .healthy)
            try container.encode(reason, forKey: .reason)
            try container.encode(since, forKey: .since)
            try container.encode(workerID, forKey: .workerID)
        }
    }

    /// When the snapshot was read (database clock), ISO-8601 UTC.
    package var takenAt: String
    /// The app the snapshot is limited to, or nil for all apps.
    package var app: String?
    package var queue: [QueueDepth]
    package var throughput: [ThroughputMinute]
    package var errors: [ErrorCount]
    package var invalidTokens: [InvalidTokenCount]
    package var workers: [WorkerState]
    package var apps: [AppState]
    /// Apps with due rows that no live worker serves (empty when the reader may not see them).
    package var unservedApps: [UnservedApp] = []

    package struct UnservedApp: Sendable, Equatable, Codable {
        package var app: String
        package var service: String = "apns"
        package var due: Int
        package var oldestDueSeconds: Double

        private enum CodingKeys: String, CodingKey {
            case app, service, due, oldestDueSeconds
        }

        package init(app: String, service: String = "apns", due: Int, oldestDueSeconds: Double) {
            self.app = app
            self.service = service
            self.due = due
            self.oldestDueSeconds = oldestDueSeconds
        }

        /// A snapshot written before services (0.4.0) has no `service`: its rows are APNs's.
        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(app: try container.decode(String.self, forKey: .app),
                      service: try container.decodeIfPresent(String.self, forKey: .service) ?? "apns",
                      due: try container.decode(Int.self, forKey: .due),
                      oldestDueSeconds: try container.decode(Double.self, forKey: .oldestDueSeconds))
        }
    }

    /// Age of the oldest row due now over every app shown (0 when none is waiting).
    package var oldestDueSeconds: Double { queue.map(\.oldestDueSeconds).max() ?? 0 }

    /// Reads everything in one repeatable-read transaction, so the sections agree.
    /// `app` limits every section to one app (workers: those serving it).
    /// Throughput covers the last `minutes` minutes; errors the top `topErrors` of the last 24 h.
    package static func load(from connection: PostgresConnection, app: String? = nil, minutes: Int = 10,
                            topErrors: Int = 10) throws -> StatusSnapshot {
        try connection.execute(script: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        do {
            let snapshot = try read(connection, app: app, minutes: minutes, topErrors: topErrors)
            try connection.execute(script: "COMMIT")
            return snapshot
        } catch {
            try? connection.execute(script: "ROLLBACK")
            throw error
        }
    }

    private static let iso = "YYYY-MM-DD\"T\"HH24:MI:SS\"Z\""

    private static func read(_ connection: PostgresConnection, app: String?, minutes: Int, topErrors: Int) throws -> StatusSnapshot {
        let filter: [(any PostgresParameter)?] = [app]
        let now = try connection.query("SELECT to_char(now() AT TIME ZONE 'UTC', '\(iso)')").string(0, 0) ?? ""

        let depth = try connection.query("""
            SELECT app, due, scheduled, sending, oldest_due_seconds FROM pgpush.queue_depth
             WHERE $1::text IS NULL OR app = $1 ORDER BY app
            """, filter)
        let queue = (0..<depth.rowCount).map { row in
            QueueDepth(app: depth.string(row, 0) ?? "", due: depth.int(row, 1) ?? 0, scheduled: depth.int(row, 2) ?? 0,
                       sending: depth.int(row, 3) ?? 0, oldestDueSeconds: rounded(depth.double(row, 4) ?? 0))
        }

        let minuteRows = try connection.query("""
            SELECT app, to_char(minute AT TIME ZONE 'UTC', '\(iso)'), delivered, failed, expired, cancelled
              FROM pgpush.throughput
             WHERE ($1::text IS NULL OR app = $1) AND minute >= date_trunc('minute', now()) - make_interval(mins => $2::int)
             ORDER BY minute, app
            """, [app, max(minutes - 1, 0)])
        let throughput = (0..<minuteRows.rowCount).map { row in
            ThroughputMinute(app: minuteRows.string(row, 0) ?? "", minute: minuteRows.string(row, 1) ?? "",
                             delivered: minuteRows.int(row, 2) ?? 0, failed: minuteRows.int(row, 3) ?? 0,
                             expired: minuteRows.int(row, 4) ?? 0, cancelled: minuteRows.int(row, 5) ?? 0)
        }

        let errorRows = try connection.query("""
            SELECT app, status, reason, errors, to_char(last_seen AT TIME ZONE 'UTC', '\(iso)')
              FROM pgpush.error_breakdown
             WHERE $1::text IS NULL OR app = $1
             ORDER BY errors DESC, app, reason LIMIT $2::int
            """, [app, topErrors])
        let errors = (0..<errorRows.rowCount).map { row in
            ErrorCount(app: errorRows.string(row, 0) ?? "", status: errorRows.int(row, 1), reason: errorRows.string(row, 2) ?? "",
                       errors: errorRows.int(row, 3) ?? 0, lastSeen: errorRows.string(row, 4) ?? "")
        }

        let invalidRows = try connection.query("""
            SELECT app, count(*) FROM pgpush.invalid_tokens WHERE $1::text IS NULL OR app = $1 GROUP BY app ORDER BY app
            """, filter)
        let invalidTokens = (0..<invalidRows.rowCount).map { row in
            InvalidTokenCount(app: invalidRows.string(row, 0) ?? "", tokens: invalidRows.int(row, 1) ?? 0)
        }

        let workerRows = try connection.query("""
            SELECT id, host, pid, version, array_to_string(apps, ','), connections, alive, seconds_since_heartbeat,
                   sent, delivered, failed, retried
              FROM pgpush.worker_health
             WHERE $1::text IS NULL OR $1 = ANY(apps) ORDER BY id
            """, filter)
        let workers = (0..<workerRows.rowCount).map { row in
            WorkerState(id: workerRows.string(row, 0) ?? "", host: workerRows.string(row, 1) ?? "", pid: workerRows.int(row, 2) ?? 0,
                        version: workerRows.string(row, 3) ?? "",
                        apps: (workerRows.string(row, 4) ?? "").split(separator: ",").map(String.init),
                        connections: workerRows.int(row, 5) ?? 0, alive: workerRows.bool(row, 6) ?? false,
                        secondsSinceHeartbeat: rounded(workerRows.double(row, 7) ?? 0),
                        sent: workerRows.int(row, 8) ?? 0, delivered: workerRows.int(row, 9) ?? 0,
                        failed: workerRows.int(row, 10) ?? 0, retried: workerRows.int(row, 11) ?? 0)
        }

        let appRows = try connection.query("""
            SELECT app, healthy, reason, to_char(since AT TIME ZONE 'UTC', '\(iso)'), worker_id, topic, service
              FROM pgpush.app_health
             WHERE $1::text IS NULL OR app = $1 ORDER BY app, service, topic NULLS FIRST
            """, filter)
        let apps = (0..<appRows.rowCount).map { row in
            AppState(app: appRows.string(row, 0) ?? "", service: appRows.string(row, 6) ?? "apns", topic: appRows.string(row, 5),
                     healthy: appRows.bool(row, 1) ?? false,
                     reason: appRows.string(row, 2), since: appRows.string(row, 3) ?? "", workerID: appRows.string(row, 4))
        }

        // Monitors and workers may read pgpush.unserved_apps; an application role may not
        // (it names every app), and its status simply has no such section.
        var unserved: [UnservedApp] = []
        if try connection.query("SELECT has_table_privilege('pgpush.unserved_apps', 'SELECT')").bool(0, 0) == true {
            let rows = try connection.query("""
                SELECT app, due, oldest_due_seconds, service FROM pgpush.unserved_apps WHERE $1::text IS NULL OR app = $1
                 ORDER BY app, service
                """, filter)
            unserved = (0..<rows.rowCount).map { row in
                UnservedApp(app: rows.string(row, 0) ?? "", service: rows.string(row, 3) ?? "apns", due: rows.int(row, 1) ?? 0,
                            oldestDueSeconds: rounded(rows.double(row, 2) ?? 0))
            }
        }
        return StatusSnapshot(takenAt: now, app: app, queue: queue, throughput: throughput, errors: errors,
                              invalidTokens: invalidTokens, workers: workers, apps: apps, unservedApps: unserved)
    }

    private static func rounded(_ value: Double) -> Double { (value * 10).rounded() / 10 }

    private enum CodingKeys: String, CodingKey {
        case takenAt, app, queue, throughput, errors, invalidTokens, workers, apps, unservedApps
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(takenAt, forKey: .takenAt)
        try container.encode(app, forKey: .app)
        try container.encode(queue, forKey: .queue)
        try container.encode(throughput, forKey: .throughput)
        try container.encode(errors, forKey: .errors)
        try container.encode(invalidTokens, forKey: .invalidTokens)
        try container.encode(workers, forKey: .workers)
        try container.encode(apps, forKey: .apps)
        try container.encode(unservedApps, forKey: .unservedApps)
    }

    /// The `--json` form: one object, snake_case keys, stable key order.
    package func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(self)
    }

    package static func decode(_ data: Data) throws -> StatusSnapshot {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(StatusSnapshot.self, from: data)
    }
}
