import PGPushCore
import Postgres

/// A worker's row in `pgpush.workers` and its app-health reports in `pgpush.app_health`.
package struct WorkerRecord: Sendable, Equatable {
    package var id: String
    package var host: String
    package var pid: Int32
    package var version: String
    package var apps: [String]
    /// Each app and service it sends for, `app/service` (`pgpush.workers.services`).
    package var services: [String]
    package var connections: Int

    package init(id: String, host: String, pid: Int32, version: String, apps: [String], services: [String]? = nil,
                connections: Int) {
        self.id = id
        self.host = host
        self.pid = pid
        self.version = version
        self.apps = apps
        self.services = services ?? apps.map { "\($0)/\(Service.apns.rawValue)" }
        self.connections = connections
    }
}

/// Counters since the worker started, published with every heartbeat.
package struct WorkerCounters: Sendable, Equatable {
    package var sent = 0
    package var delivered = 0
    package var failed = 0
    package var retried = 0
    package init() {}
}

extension NotificationQueue {
    package func register(_ worker: WorkerRecord) throws {
        try connection.query("""
            INSERT INTO pgpush.workers (id, host, pid, version, apps, connections, services)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), apps = EXCLUDED.apps, connections = EXCLUDED.connections,
                                           services = EXCLUDED.services
            """, [worker.id, worker.host, worker.pid, worker.version, worker.apps, worker.connections, worker.services])
    }

    /// Publishes the counters; false when the worker has no row to update (an operator
    /// or a cleanup deleted it), so that the caller registers again.
    @discardableResult
    package func heartbeat(_ counters: WorkerCounters) throws -> Bool {
        try connection.query("""
            UPDATE pgpush.workers SET heartbeat_at = now(), sent = $2, delivered = $3, failed = $4, retried = $5
             WHERE id = $1
            RETURNING 1
            """, [workerID, counters.sent, counters.delivered, counters.failed, counters.retried]).rowCount > 0
    }

    package func deregister() throws {
        try connection.query("DELETE FROM pgpush.workers WHERE id = $1", [workerID])
    }

    /// Records whether `app` can be served by `service` — all of it when `topic` is nil, or
    /// only that apns-topic of it. Each (app, service, topic) has its own row: a report for one
    /// topic leaves the app's row and other topics' rows alone. `since` moves only when health
    /// changes.
    package func reportAppHealth(app: String, service: Service = .apns, topic: String? = nil, healthy: Bool,
                                reason: String?) throws {
        // The conflict target is the unique index on (app, service, coalesce(topic, '')), which
        // makes a null topic one value, so the whole-app row is found like any other.
        try connection.query("""
            INSERT INTO pgpush.app_health AS h (app, service, topic, healthy, reason, worker_id)
            VALUES ($1, $6, $2, $3, $4, $5)
            ON CONFLICT (app, service, coalesce(topic, '')) DO UPDATE SET
                healthy    = EXCLUDED.healthy,
                reason     = EXCLUDED.reason,
                worker_id  = EXCLUDED.worker_id,
                checked_at = now(),
                since      = CASE WHEN h.healthy = EXCLUDED.healthy AND h.reason IS NOT DISTINCT FROM EXCLUDED.reason
                                  THEN h.since ELSE now() END
            """, [app, topic, healthy, reason.map { Outcome.storableText($0) }, workerID, service.rawValue])
    }
}

/// One app's unfinished rows, as `pgpush.queue_depth` shows them.
package struct QueueDepth: Sendable, Equatable {
    package var due: Int
    package var sending: Int
    package var oldestDueSeconds: Double
}

extension NotificationQueue {
    package func queueDepth() throws -> [String: QueueDepth] {
        let result = try connection.query("SELECT app, due, sending, oldest_due_seconds FROM pgpush.queue_depth")
        var depth: [String: QueueDepth] = [:]
        for row in 0..<result.rowCount {
            guard let app = result.string(row, 0) else { continue }
            depth[app] = QueueDepth(due: result.int(row, 1) ?? 0, sending: result.int(row, 2) ?? 0,
                                    oldestDueSeconds: result.double(row, 3) ?? 0)
        }
        return depth
    }

    /// Due rows of apps no live worker serves, and how many such apps.
    package func unservedDue() throws -> (due: Int, apps: Int) {
        let result = try connection.query("SELECT coalesce(sum(due), 0)::bigint, count(*) FROM pgpush.unserved_apps")
        return (result.int(0, 0) ?? 0, result.int(0, 1) ?? 0)
    }
}
