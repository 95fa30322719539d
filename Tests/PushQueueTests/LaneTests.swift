import Foundation
import PGPushCore
import PGPushOperator
import PGPushTestSupport
import Postgres
import PushQueue
import Testing

/// Lanes (sql/018_daily_operations.sql, 019): within an app and service, every due urgent
/// row is claimed before any normal one, normal before bulk, then by send_after and id.
@Suite struct LaneTests {
    static let token = String(repeating: "a1", count: 32)

    private func insert(_ connection: PostgresConnection, count: Int, lane: String, sendAfter: String = "now()") throws -> [Int64] {
        let result = try connection.query("""
            INSERT INTO pgpush.notifications (device_token, payload, lane, send_after)
            SELECT $1, '{"aps":{"alert":"x"}}', $2, \(sendAfter) FROM generate_series(1, $3::int)
            RETURNING id
            """, [Self.token, lane, count])
        return (0..<result.rowCount).compactMap { result.int64($0, 0) }
    }

    /// A one-time code inserted behind a campaign of 100,000 bulk rows is taken by the next
    /// claim, and normal rows before the campaign's; the campaign goes on after them in order.
    @Test func anUrgentRowOvertakesABulkBacklog() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let bulk = try insert(connection, count: 100_000, lane: "bulk", sendAfter: "now() - interval '1 minute'")
        let normal = try insert(connection, count: 3, lane: "normal")
        let urgent = try insert(connection, count: 1, lane: "urgent")
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        let firstClaim = try queue.claim(app: "default", limit: 6, lease: .seconds(30)).claimed
        let first = firstClaim.map(\.id)
        // In the order they are to be sent: lane by lane (the claim says each row's lane, 019).
        #expect(first == urgent + normal + bulk.prefix(2), "\(first)")
        #expect(firstClaim.map(\.notification.lane) == [.urgent, .normal, .normal, .normal, .bulk, .bulk])
        let next = try queue.claim(app: "default", limit: 3, lease: .seconds(30)).claimed.map(\.id)
        #expect(next == Array(bulk[2..<5]))
    }

    /// Rows scheduled for later in one lane are not read on the way to the next lane: each
    /// lane's scan is bounded by send_after in the index, as the one scan was before lanes.
    @Test func scheduledRowsOfOneLaneAreNotReadOnTheWayToTheNext() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        _ = try insert(connection, count: 20_000, lane: "urgent", sendAfter: "now() + interval '1 day'")
        _ = try insert(connection, count: 20_000, lane: "normal", sendAfter: "now() + interval '1 day'")
        let due = try insert(connection, count: 5, lane: "bulk")
        try connection.execute(script: "ANALYZE pgpush.notifications")
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        var claimed: [Int64] = []
        let plan = try queue.explained {
            claimed = try queue.claim(app: "default", limit: 10, lease: .seconds(30)).claimed.map(\.id)
        }.joined(separator: "\n")
        #expect(claimed == due)
        let scan = plan.split(separator: "\n").drop { !$0.contains("Index Scan using notifications_queued_due") }
        let condition = scan.dropFirst().first ?? ""
        #expect(condition.contains("Index Cond: ") && condition.contains("lane = l.lane") && condition.contains("send_after <="),
                "\(plan)")
        // Three lanes, three short descents: a few dozen buffers, not the 40,000 entries scheduled.
        let buffers = scan.first { $0.contains("Buffers: shared hit=") }?.components(separatedBy: "hit=").last
        let hits = buffers.flatMap { Int($0.prefix { $0.isNumber }) }
        #expect((hits ?? .max) < 100, "\(plan)")
    }

    /// A lane other than the three is refused at INSERT by its named rule; enqueue,
    /// enqueue_many and pgpush enqueue take the lane by name, null meaning normal.
    @Test func theLaneIsOneOfThreeAndTheEnqueueFunctionsTakeIt() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let refused = try #require(throws: PostgresError.self) {
            try connection.query("INSERT INTO pgpush.notifications (device_token, payload, lane) VALUES ($1, '{}', 'fast')", [Self.token])
        }
        #expect(refused.constraint == "notifications_lane_urgent_normal_or_bulk")
        #expect(ConstraintExplanation.explain(refused)?.contains("urgent, normal or bulk") == true)
        try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{}}', lane => 'urgent')", [Self.token])
        try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{}}', lane => NULL)", [Self.token])
        try connection.query("SELECT pgpush.enqueue($1, '{\"aps\":{}}')", [Self.token])
        try connection.query("SELECT * FROM pgpush.enqueue_many(device_tokens => $1, payload => '{\"aps\":{}}', lane => 'bulk')",
                             [[Self.token, Self.token]])
        try connection.query("""
            SELECT pgpush.enqueue(channel_id => 'dGVzdA==', lane => 'urgent',
                                  payload => '{"aps":{"event":"update","timestamp":1,"content-state":{}}}')
            """)
        var request = EnqueueRequest(tokens: [Self.token], payload: "{\"aps\":{}}")
        request.lane = "bulk"
        _ = try request.enqueue(on: connection)
        let flags = try EnqueueRequest(flags: ["token": Self.token, "alert": "hi", "lane": "urgent"])
        #expect(flags.lane == "urgent")
        let lanes = try connection.query("SELECT string_agg(lane, ',' ORDER BY id) FROM pgpush.notifications")
        #expect(lanes.string(0, 0) == "urgent,normal,normal,bulk,bulk,urgent,bulk")
    }

    /// An application inserts a lane; a monitor reads it.
    @Test func rolesSetAndReadTheLane() throws {
        let conninfo = try TestDatabase.migrated()
        let owner = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.applyRoles(owner)
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let app = try PostgresConnection(conninfo: TestDatabase.login(owner, conninfo: conninfo, role: "lane_app_\(suffix)",
                                                                       group: "pgpush_app", apps: ["shop"]))
        let monitor = try PostgresConnection(conninfo: TestDatabase.login(owner, conninfo: conninfo, role: "lane_mon_\(suffix)",
                                                                           group: "pgpush_monitor"))
        try app.query("INSERT INTO pgpush.notifications (app, device_token, payload, lane) VALUES ('shop', $1, '{}', 'urgent')",
                      [Self.token])
        try app.query("SELECT pgpush.enqueue(device_token => $1, payload => '{}', app => 'shop', lane => 'bulk')", [Self.token])
        let lanes = try monitor.query("SELECT string_agg(lane, ',' ORDER BY id) FROM pgpush.notifications")
        #expect(lanes.string(0, 0) == "urgent,bulk")
    }
}
