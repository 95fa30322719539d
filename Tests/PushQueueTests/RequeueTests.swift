import Foundation
import PGPushOperator
import PGPushTestSupport
import Postgres
import PushQueue
import Testing

/// pgpush.requeue and `pgpush requeue` (sql/018_daily_operations.sql): failed and
/// expired rows back to queued, as if new; nothing else moves; the tenant rules hold.
@Suite struct RequeueTests {
    static let token = String(repeating: "b2", count: 32)

    /// Rows in each final and unfinished state; returns their ids by status.
    private func rowsInEveryState(_ connection: PostgresConnection, app: String = "default") throws -> [String: Int64] {
        var ids: [String: Int64] = [:]
        for status in ["queued", "delivered", "failed", "expired", "cancelled"] {
            let finished = status == "queued" ? "NULL" : "now()"
            let attempts = status == "queued" ? 0 : 3
            ids[status] = try connection.query("""
                INSERT INTO pgpush.notifications (app, device_token, payload, status, attempts, claim_count, finished_at,
                                                  last_reason, lane)
                VALUES ($1, $2, '{"aps":{"alert":"x"}}', $3, $4, $4, \(finished), CASE WHEN $3 = 'failed' THEN 'CouldNotConnect' END,
                        'bulk')
                RETURNING id
                """, [app, Self.token, status, attempts]).int64(0, 0)
        }
        return ids
    }

    /// A failed and an expired row come back queued, no attempt counted, due now, their lane
    /// and last answer kept; delivered, cancelled and queued rows are left as they are; the
    /// next claim takes the two.
    @Test func failedAndExpiredRowsComeBackAsNew() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let ids = try rowsInEveryState(connection)
        try connection.query("UPDATE pgpush.notifications SET send_after = now() - interval '1 day'")
        let all = ids.values.sorted()
        let requeued = try connection.query("SELECT array_agg(r ORDER BY r) FROM pgpush.requeue($1) AS r", [all]).string(0, 0)
        #expect(requeued == "{\(ids["failed"]!),\(ids["expired"]!)}")
        let rows = try connection.query("""
            SELECT status, attempts, finished_at IS NULL, send_after > now() - interval '1 minute', lane, coalesce(last_reason, '')
              FROM pgpush.notifications WHERE id = $1
            """, [ids["failed"]])
        #expect(rows.string(0, 0) == "queued" && rows.int(0, 1) == 0 && rows.bool(0, 2) == true && rows.bool(0, 3) == true)
        #expect(rows.string(0, 4) == "bulk" && rows.string(0, 5) == "CouldNotConnect")
        let states = try connection.query("SELECT string_agg(status, ',' ORDER BY id) FROM pgpush.notifications").string(0, 0)
        #expect(states == "queued,delivered,queued,queued,cancelled")
        let claimed = try NotificationQueue(connection: connection, workerID: "w1")
            .claim(app: "default", limit: 10, lease: .seconds(30)).claimed.map(\.id)
        #expect(claimed == [ids["queued"]!, ids["failed"]!, ids["expired"]!].sorted())
        // Asked again, nothing is final any more: nothing moves.
        #expect(try connection.query("SELECT count(*) FROM pgpush.requeue($1)", [all]).int(0, 0) == 0)
    }

    /// A row already past its expires_at is requeued but expires again at the claim.
    @Test func aRowPastItsExpiryExpiresAgain() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let id = try #require(try rowsInEveryState(connection)["expired"])
        try connection.query("UPDATE pgpush.notifications SET expires_at = now() - interval '1 minute' WHERE id = $1", [id])
        #expect(try connection.query("SELECT count(*) FROM pgpush.requeue(ARRAY[$1::bigint])", [id]).int(0, 0) == 1)
        let result = try NotificationQueue(connection: connection, workerID: "w1").claim(app: "default", limit: 10, lease: .seconds(30))
        #expect(result.expiredIDs == [id])
    }

    /// Claims start at the lowest unfinished row (claim_from_id): a requeued row below the
    /// mark lowers it, and a worker's next read of the mark finds the row.
    @Test func aRequeuedRowBelowTheClaimsMarkIsClaimed() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        try TestDatabase.cutHistory(connection, span: 10, ahead: 2)
        let ids = try rowsInEveryState(connection)
        try connection.query("""
            UPDATE pgpush.notifications SET status = 'cancelled', finished_at = now() WHERE status = 'queued'
            """)
        try connection.query("INSERT INTO pgpush.notifications (device_token, payload) SELECT $1, '{}' FROM generate_series(1, 12)",
                             [Self.token])
        try connection.query("UPDATE pgpush.notifications SET status = 'delivered', finished_at = now() WHERE status = 'queued'")
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        _ = try queue.createHistoryPartitions()
        let mark = try queue.claimFrom()
        let failed = try #require(ids["failed"])
        #expect(mark > failed)
        #expect(try connection.query("SELECT count(*) FROM pgpush.requeue(ARRAY[$1::bigint])", [failed]).int(0, 0) == 1)
        #expect(try connection.query("SELECT claim_from_id FROM pgpush.history_partitioning").int64(0, 0) == failed)
        let fresh = NotificationQueue(connection: connection, workerID: "w2")
        #expect(try fresh.claim(app: "default", limit: 10, lease: .seconds(30)).claimed.map(\.id) == [failed])
    }

    /// The requeue wakes the workers of the app as an insert does (pgpush_queued).
    @Test func aRequeueWakesTheWorkers() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        let ids = try rowsInEveryState(connection, app: "shop")
        // LISTEN needs a session: through a transaction pooler, a direct connection.
        let listener = try PostgresConnection(conninfo: try TestDatabase.session(conninfo))
        try listener.listen("pgpush_queued")
        try connection.query("SELECT pgpush.requeue(ARRAY[$1::bigint])", [ids["failed"]])
        var heard: [PostgresNotification] = []
        for _ in 0..<100 where heard.isEmpty { heard = try listener.waitForNotifications(timeout: .milliseconds(100)) }
        #expect(heard.map(\.payload) == ["shop"])
    }

    /// `pgpush requeue`'s request: by app, narrowed by reason, finish time and service, in
    /// batches; it counts what moved.
    @Test func theCommandsRequestNarrowsByReasonTimeAndService() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        try connection.query("""
            INSERT INTO pgpush.notifications (app, service, device_token, payload, status, claim_count, finished_at, last_reason)
            SELECT 'shop', s.service, CASE s.service WHEN 'apns' THEN $1 ELSE 'fcm-token' END,
                   CASE s.service WHEN 'apns' THEN '{"aps":{}}'::jsonb ELSE '{}'::jsonb END,
                   'failed', 1, now() - make_interval(hours => g % 3), CASE WHEN g % 2 = 0 THEN 'CouldNotConnect' ELSE 'BadDeviceToken' END
              FROM generate_series(1, 30) AS g, (VALUES ('apns'), ('fcm')) AS s(service)
            """, [Self.token])
        // 60 rows: per service 15 CouldNotConnect; of those, g % 3 == 0 finished now (5).
        let since = Date().addingTimeInterval(-1800)
        #expect(try RequeueRequest(app: "shop", reason: "CouldNotConnect", since: since, service: "fcm")
            .requeue(on: connection, batchSize: 2) == 5)
        #expect(try RequeueRequest(app: "shop", reason: "CouldNotConnect").requeue(on: connection, batchSize: 7) == 25)
        #expect(try RequeueRequest(app: "other").requeue(on: connection) == 0)
        #expect(try RequeueRequest(app: "shop").requeue(on: connection, batchSize: 1000) == 30)
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'queued'").int(0, 0) == 60)
    }

    /// A member of pgpush_app requeues rows of its apps only; a monitor and a worker may not
    /// call the function at all.
    @Test func theTenantRulesHold() throws {
        let conninfo = try TestDatabase.migrated()
        let owner = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.applyRoles(owner)
        let mine = try rowsInEveryState(owner, app: "shop")
        let theirs = try rowsInEveryState(owner, app: "bank")
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        func login(_ name: String, _ group: String, _ apps: [String] = []) throws -> PostgresConnection {
            try PostgresConnection(conninfo: TestDatabase.login(owner, conninfo: conninfo, role: "rq_\(name)_\(suffix)",
                                                                group: group, apps: apps))
        }
        let app = try login("app", "pgpush_app", ["shop"])
        let both = [mine["failed"]!, theirs["failed"]!]
        let requeued = try app.query("SELECT array_agg(r) FROM pgpush.requeue($1) AS r", [both]).string(0, 0)
        #expect(requeued == "{\(mine["failed"]!)}")
        #expect(try owner.query("SELECT status FROM pgpush.notifications WHERE id = $1", [theirs["failed"]]).string(0, 0) == "failed")
        #expect(try RequeueRequest(app: "bank").requeue(on: app) == 0)
        for group in ["pgpush_monitor", "pgpush_worker"] {
            let other = try login(String(group.dropFirst("pgpush_".count)), group)
            let denied = try #require(throws: PostgresError.self) {
                try other.query("SELECT pgpush.requeue($1)", [[theirs["expired"]!]])
            }
            #expect(denied.sqlState == "42501")
        }
        #expect(try owner.query("SELECT status FROM pgpush.notifications WHERE id = $1", [theirs["expired"]]).string(0, 0) == "expired")
    }
}
