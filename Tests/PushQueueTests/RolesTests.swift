import Foundation
import PGPushTestSupport
import Postgres
import PushQueue
import Testing

/// sql/roles.sql: each role can do its job and nothing more.
@Suite(.serialized) struct RolesTests {
    static let token = String(repeating: "0a", count: 32)

    /// A migrated database with roles.sql applied, and login roles that are members of each group.
    struct Setup {
        let conninfo: String
        let app: PostgresConnection
        let worker: PostgresConnection
        let monitor: PostgresConnection
        let owner: PostgresConnection

        init() throws {
            conninfo = try TestDatabase.migrated()
            owner = try PostgresConnection(conninfo: conninfo)
            let roles = try String(contentsOfFile: TestDatabase.sqlDirectory + "/roles.sql", encoding: .utf8)
            try owner.execute(script: roles)
            try owner.execute(script: roles)   // safe to run again
            let suffix = UUID().uuidString.prefix(8).lowercased()
            var logins: [String: PostgresConnection] = [:]
            for group in ["app", "worker", "monitor"] {
                let login = "login_\(group)_\(suffix)"
                try owner.execute(script: "CREATE ROLE \(login) LOGIN IN ROLE pgpush_\(group)")
                logins[group] = try PostgresConnection(conninfo: conninfo.replacingOccurrences(of: "user=pgpush", with: "user=\(login)"))
            }
            guard let app = logins["app"], let worker = logins["worker"], let monitor = logins["monitor"] else {
                throw PostgresError(kind: .connection, message: "login roles missing")
            }
            self.app = app
            self.worker = worker
            self.monitor = monitor
        }
    }

    private func expectDenied(_ connection: PostgresConnection, _ sql: String, _ parameters: [(any PostgresParameter)?] = [],
                              sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try connection.query(sql, parameters)
            Issue.record("expected permission denied for: \(sql)", sourceLocation: sourceLocation)
        } catch let error as PostgresError {
            #expect(error.sqlState == "42501", "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func eachRoleDoesItsJobAndNoMore() throws {
        let setup = try Setup()

        // Application: enqueue (both ways), read, cancel.
        let first = try setup.app.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{\"alert\":\"a\"}}', idempotency_key => 'k1')", [Self.token])
        let again = try setup.app.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{\"alert\":\"a\"}}', idempotency_key => 'k1')", [Self.token])
        #expect(first.int64(0, 0) != nil && first.int64(0, 0) == again.int64(0, 0))
        try setup.app.query("INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, '{}')", [Self.token])
        let toCancel = try setup.app.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{}')", [[Self.token, Self.token]])
        let ids = (0..<toCancel.rowCount).compactMap { toCancel.int64($0, 0) }
        #expect(try setup.app.query("SELECT pgpush.cancel($1)", [ids]).rowCount == 2)
        #expect(try setup.app.query("SELECT count(*) FROM pgpush.queue_depth").rowCount == 1)
        expectDenied(setup.app, "UPDATE pgpush.notifications SET status = 'delivered'")
        expectDenied(setup.app, "DELETE FROM pgpush.notifications")
        expectDenied(setup.app, "INSERT INTO pgpush.notifications (device_token, payload, status) VALUES ($1, '{}', 'delivered')", [Self.token])
        expectDenied(setup.app, "INSERT INTO pgpush.delivery_errors (notification_id, app, device_token, attempt, reason) VALUES (1, 'a', 'b', 1, 'x')")
        expectDenied(setup.app, "SELECT pgpush.prune('0 seconds')")
        expectDenied(setup.app, "DELETE FROM pgpush.workers")

        // Worker: the whole cycle through the queue type, then prune.
        let queue = NotificationQueue(connection: setup.worker, workerID: "role-worker")
        try queue.register(WorkerRecord(id: "role-worker", host: "h", pid: 1, version: "t", apps: ["default"], connections: 1))
        let claimed = try queue.claim(app: "default", limit: 10, lease: .seconds(30)).claimed
        #expect(claimed.count == 2)
        let outcomes = claimed.map {
            Outcome(id: $0.id, claimCount: $0.claimCount, disposition: .failed, httpStatus: 410, reason: "Unregistered",
                    recordsError: true, invalidatesToken: true)
        }
        #expect(try queue.complete(outcomes).count == 2)
        try queue.heartbeat(WorkerCounters())
        try queue.reportAppHealth(app: "default", healthy: true, reason: nil)
        #expect(try queue.rescueExpiredLeases(maxAttempts: 5) == 0)
        try queue.deregister()
        #expect(try setup.worker.query("SELECT pgpush.prune('0 seconds')").int(0, 0) == 4)
        expectDenied(setup.worker, "INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, '{}')", [Self.token])
        expectDenied(setup.worker, "DELETE FROM pgpush.notifications")
        expectDenied(setup.worker, "SELECT pgpush.cancel('{1}')")
        expectDenied(setup.worker, "DROP TABLE pgpush.invalid_tokens")

        // Monitor: reads only.
        for view in ["queue_depth", "throughput", "error_breakdown", "worker_health", "app_health", "invalid_tokens"] {
            _ = try setup.monitor.query("SELECT * FROM pgpush.\(view)")
        }
        #expect(try setup.monitor.query("SELECT count(*) FROM pgpush.invalid_tokens").int(0, 0) == 1)
        expectDenied(setup.monitor, "SELECT pgpush.enqueue(device_token => $1, payload => '{}')", [Self.token])
        expectDenied(setup.monitor, "UPDATE pgpush.notifications SET status = 'cancelled'")
        expectDenied(setup.monitor, "SELECT pgpush.cancel('{1}')")
        expectDenied(setup.monitor, "DELETE FROM pgpush.delivery_errors")

        // The token is now listed Unregistered: the worker's claim finishes the next row for it
        // with its own rights, and only the application may take the token off the list.
        let dead = try setup.app.query("SELECT pgpush.enqueue(device_token => $1, payload => '{}', deliver_once => true)",
                                       [Self.token]).int64(0, 0)
        #expect(try queue.claim(app: "default", limit: 10, lease: .seconds(30)).knownInvalidIDs == [try #require(dead)])
        expectDenied(setup.monitor, "SELECT pgpush.token_registered('default', $1)", [Self.token])
        expectDenied(setup.worker, "SELECT pgpush.token_registered('default', $1)", [Self.token])
        #expect(try setup.app.query("SELECT pgpush.token_registered('default', $1)", [Self.token]).bool(0, 0) == true)
    }
}
