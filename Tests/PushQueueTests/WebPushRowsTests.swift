import Foundation
import PGPushCore
import PGPushTestSupport
import Postgres
import PushQueue
import Testing

/// Web Push rows in the queue (sql/017_web_push.sql): the subscription and its rules, the
/// claim that returns it, a dead endpoint listed and suppressed, the enqueue functions, and
/// the roles.
@Suite(.serialized) struct WebPushRowsTests {
    static let endpoint = "https://fcm.googleapis.com/fcm/send/dQw4w9WgXcQ:APA91bH"
    /// The browser keys of RFC 8291's Appendix A.
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"

    static func subscription(endpoint: String = endpoint, p256dh: String = p256dh, auth: String = auth,
                             extra: String = #""expirationTime":null,"#) -> String {
        #"{"endpoint":"\#(endpoint)",\#(extra)"keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#
    }

    /// Standard base64 with padding, as older stored subscriptions have it.
    static var paddedStandardKeys: String {
        subscription(p256dh: p256dh.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "=",
                     auth: auth + "==")
    }

    /// Each invalid Web Push row and the rule that names what is wrong.
    static let cases: [(columns: String, values: [String?], constraint: String)] = [
        ("service, payload", ["webpush", "{}"], "notifications_webpush_target_is_subscription"),
        ("service, device_token, subscription, payload", ["webpush", "abcd", subscription(), "{}"],
         "notifications_webpush_target_is_subscription"),
        ("service, channel_id, subscription, payload", ["webpush", "news", subscription(), "{}"],
         "notifications_webpush_target_is_subscription"),
        ("device_token, subscription, payload", ["abcd", subscription(), #"{"aps":{}}"#], "notifications_subscription_only_webpush"),
        ("service, subscription, payload", ["webpush", subscription(endpoint: "http://push.example/x"), "{}"],
         "notifications_webpush_endpoint_https"),
        ("service, subscription, payload", ["webpush", subscription(endpoint: "https://" + String(repeating: "a", count: 2041)), "{}"],
         "notifications_webpush_endpoint_https"),
        ("service, subscription, payload", ["webpush", #"["https://fcm.googleapis.com/x"]"#, "{}"],
         "notifications_webpush_endpoint_https"),
        ("service, subscription, payload", ["webpush", #"{"endpoint":"https://fcm.googleapis.com/x"}"#, "{}"],
         "notifications_webpush_p256dh_65_bytes"),
        ("service, subscription, payload", ["webpush", subscription(p256dh: String(p256dh.dropLast())), "{}"],
         "notifications_webpush_p256dh_65_bytes"),
        // A compressed or other point does not start with 0x04.
        ("service, subscription, payload", ["webpush", subscription(p256dh: "A" + p256dh.dropFirst()), "{}"],
         "notifications_webpush_p256dh_65_bytes"),
        ("service, subscription, payload", ["webpush", subscription(auth: "BTBZMqHH6r4Tts7J_aSI"), "{}"],
         "notifications_webpush_auth_16_bytes"),
        ("service, subscription, payload", ["webpush", subscription(auth: "BTBZMqHH6r4Tts7J_aSIg!"), "{}"],
         "notifications_webpush_auth_16_bytes"),
        ("service, subscription, payload, collapse_id", ["webpush", subscription(), "{}", "score.1"],
         "notifications_webpush_collapse_id_topic"),
        ("service, subscription, payload, collapse_id", ["webpush", subscription(), "{}", String(repeating: "t", count: 33)],
         "notifications_webpush_collapse_id_topic"),
        // Five characters: no base64url text is that long.
        ("service, subscription, payload, collapse_id", ["webpush", subscription(), "{}", "score"],
         "notifications_webpush_collapse_id_topic"),
        ("service, subscription, payload", ["webpush", subscription(), #""\#(String(repeating: "x", count: 3992))""#],
         "notifications_payload_too_large"),
    ]

    @Test(arguments: 0..<cases.count)
    func invalidWebPushRowIsRejectedByNamedRule(index: Int) throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let bad = Self.cases[index]
        let placeholders = (1...bad.values.count).map { "$\($0)" }.joined(separator: ", ")
        let error = try #require(throws: PostgresError.self) {
            try connection.query("INSERT INTO pgpush.notifications (\(bad.columns)) VALUES (\(placeholders))", bad.values)
        }
        #expect(error.sqlState == "23514")
        #expect(error.constraint == bad.constraint, "\(error)")
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 0)
    }

    /// What browsers give, as they give it: keys in either alphabet, `expirationTime` or not,
    /// any JSON value as the payload, up to 3,993 bytes of it, a Topic of 32 characters.
    @Test func subscriptionsAsBrowsersWriteThemAreTaken() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let largest = #""\#(String(repeating: "x", count: 3991))""#
        let rows: [(subscription: String, payload: String, collapseID: String?)] = [
            (Self.subscription(), #"{"title":"Hi"}"#, nil),
            (Self.subscription(extra: ""), #""just text""#, "abcd"),
            (Self.subscription(extra: #""expirationTime":1790000000000,"#), "[1,2,3]", String(repeating: "z", count: 32)),
            (Self.paddedStandardKeys, largest, "ab_-"),
        ]
        for row in rows {
            try connection.query("INSERT INTO pgpush.notifications (service, subscription, payload, collapse_id) VALUES ('webpush', $1, $2, $3)",
                                 [row.subscription, row.payload, row.collapseID])
        }
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications WHERE service = 'webpush'").int(0, 0) == 4)
    }

    /// The claim returns a Web Push row's subscription, for its service only.
    @Test func theClaimReturnsTheSubscription() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        let id = try connection.query("""
            INSERT INTO pgpush.notifications (service, subscription, payload, priority, collapse_id)
            VALUES ('webpush', $1, '"hello"', 1, 'news') RETURNING id
            """, [Self.subscription()]).int64(0, 0)
        #expect(try queue.claim(app: "default", limit: 10, lease: .seconds(30)).claimed.isEmpty)
        #expect(try queue.claim(app: "default", service: .fcm, limit: 10, lease: .seconds(30)).claimed.isEmpty)
        let claimed = try queue.claim(app: "default", service: .webpush, limit: 10, lease: .seconds(30)).claimed
        let row = try #require(claimed.first?.notification)
        #expect(claimed.count == 1 && row.id == id)
        #expect(row.service == .webpush && row.deviceToken == "" && row.channelID == nil)
        #expect(row.priority == 1 && row.collapseID == "news" && String(decoding: row.payload, as: UTF8.self) == #""hello""#)
        let subscription = try #require(row.subscription.flatMap { JSONValue.parse($0) })
        guard case .object(let members) = subscription else { Issue.record("not an object"); return }
        #expect(members["endpoint"]?.stringValue == Self.endpoint)
    }

    /// A subscription the push service says is gone (404, 410) is listed by its endpoint; the
    /// next row to it fails at the claim without a request, until the application says the
    /// browser subscribed again.
    @Test func aGoneSubscriptionIsListedByItsEndpoint() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        let other = Self.endpoint + "-other"
        for endpoint in [Self.endpoint, other] {
            try connection.query("INSERT INTO pgpush.notifications (service, subscription, payload) VALUES ('webpush', $1, '{}')",
                                 [Self.subscription(endpoint: endpoint)])
        }
        let rows = try queue.claim(app: "default", service: .webpush, limit: 10, lease: .seconds(30)).claimed
        #expect(rows.count == 2)
        let gone = Outcome(id: rows[0].id, claimCount: rows[0].claimCount, disposition: .failed, httpStatus: 410,
                           reason: "SubscriptionGone", recordsError: true, invalidatesToken: true)
        #expect(try queue.complete([gone, .delivered(rows[1])]) == Set(rows.map(\.id)))
        let listed = try connection.query("SELECT service, device_token, reason FROM pgpush.invalid_tokens")
        #expect(listed.rowCount == 1)
        #expect(listed.string(0, 0) == "webpush" && listed.string(0, 1) == Self.endpoint && listed.string(0, 2) == "SubscriptionGone")
        #expect(try connection.query("SELECT service, status FROM pgpush.delivery_errors").string(0, 0) == "webpush")

        for endpoint in [Self.endpoint, other] {
            try connection.query("SELECT pgpush.enqueue(subscription => $1::jsonb, payload => '{}')",
                                 [Self.subscription(endpoint: endpoint)])
        }
        let next = try queue.claim(app: "default", service: .webpush, limit: 10, lease: .seconds(30))
        #expect(next.knownInvalidIDs.count == 1)
        #expect(next.claimed.count == 1)
        let reason = try connection.query("SELECT last_reason FROM pgpush.notifications WHERE id = $1", [next.knownInvalidIDs.first])
        #expect(reason.string(0, 0) == "KnownInvalidToken")
        #expect(try connection.query("SELECT pgpush.token_registered('default', $1, 'webpush')", [Self.endpoint]).bool(0, 0) == true)
        try connection.query("SELECT pgpush.enqueue(subscription => $1::jsonb, payload => '{}')", [Self.subscription()])
        #expect(try queue.claim(app: "default", service: .webpush, limit: 10, lease: .seconds(30)).claimed.count == 1)
    }

    /// `subscription` (`subscriptions`, a JSON array) by name makes Web Push rows; every call
    /// written before keeps its meaning, positional ones included.
    @Test func theEnqueueFunctionsTakeSubscriptionsByName() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let one = try connection.query("SELECT pgpush.enqueue(subscription => $1::jsonb, payload => '\"hi\"', idempotency_key => 'k')",
                                       [Self.subscription()]).int64(0, 0)
        let again = try connection.query("SELECT pgpush.enqueue(subscription => $1::jsonb, payload => '\"hi\"', idempotency_key => 'k')",
                                         [Self.subscription()]).int64(0, 0)
        #expect(one != nil && one == again)
        let many = try connection.query("""
            SELECT * FROM pgpush.enqueue_many(subscriptions => $1::jsonb, payload => '{"n":1}', idempotency_key => 'm', priority => 10)
            """, ["[\(Self.subscription(endpoint: Self.endpoint + "1")),\(Self.subscription(endpoint: Self.endpoint + "2"))]"])
        #expect(many.rowCount == 2)
        // Written before 017, by position with untyped literals: device tokens.
        try connection.query("SELECT pgpush.enqueue('abcd', '{\"aps\":{}}')")
        try connection.query("SELECT * FROM pgpush.enqueue_many('{abcd,ef01}', '{\"aps\":{}}')")
        let keys = try connection.query("""
            SELECT service, coalesce(device_token, subscription ->> 'endpoint'), coalesce(idempotency_key, '-'), priority
              FROM pgpush.notifications ORDER BY id
            """)
        #expect((0..<keys.rowCount).map { keys.string($0, 0) } == ["webpush", "webpush", "webpush", "apns", "apns", "apns"])
        #expect(keys.string(1, 2) == "m:\(Self.endpoint)1" && keys.int(1, 3) == 10)
        let both = try #require(throws: PostgresError.self) {
            try connection.query("SELECT * FROM pgpush.enqueue_many(device_tokens => '{abcd}', subscriptions => '[]', payload => '{}')")
        }
        #expect(both.sqlState == "22023")
    }

    /// An application role enqueues Web Push rows; the worker reads their subscriptions; a
    /// monitor sees their states, never a subscription.
    @Test func eachRoleHandlesWebPushRowsAsItsJobNeeds() throws {
        let conninfo = try TestDatabase.migrated()
        let owner = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.applyRoles(owner)
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        func login(_ name: String, _ group: String, _ apps: [String] = []) throws -> PostgresConnection {
            try PostgresConnection(conninfo: TestDatabase.login(owner, conninfo: conninfo, role: "wp_\(name)_\(suffix)",
                                                                group: group, apps: apps))
        }
        let app = try login("app", "pgpush_app", ["web"])
        let worker = try login("worker", "pgpush_worker")
        let monitor = try login("monitor", "pgpush_monitor")
        try app.query("SELECT pgpush.enqueue(subscription => $1::jsonb, payload => '{}', app => 'web')", [Self.subscription()])
        try app.query("SELECT * FROM pgpush.enqueue_many(subscriptions => $1::jsonb, payload => '{}', app => 'web')",
                      ["[\(Self.subscription(endpoint: Self.endpoint + "2"))]"])
        try app.query("INSERT INTO pgpush.notifications (app, service, subscription, payload) VALUES ('web', 'webpush', $1, '{}')",
                      [Self.subscription(endpoint: Self.endpoint + "3")])
        let denied = try #require(throws: PostgresError.self) {
            try app.query("SELECT pgpush.enqueue(subscription => $1::jsonb, payload => '{}', app => 'other')", [Self.subscription()])
        }
        #expect(denied.sqlState == "42501")
        let claimed = try NotificationQueue(connection: worker, workerID: "w").claim(app: "web", service: .webpush, limit: 10,
                                                                                       lease: .seconds(30)).claimed
        #expect(claimed.count == 3 && claimed.allSatisfy { $0.notification.subscription != nil })
        let hidden = try #require(throws: PostgresError.self) { try monitor.query("SELECT subscription FROM pgpush.notifications") }
        #expect(hidden.sqlState == "42501")
        #expect(try monitor.query("SELECT count(*) FROM pgpush.notifications WHERE service = 'webpush' AND status = 'sending'")
            .int(0, 0) == 3)
    }
}
