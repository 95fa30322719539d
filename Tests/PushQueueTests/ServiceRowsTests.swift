import Foundation
import PGPushCore
import PGPushTestSupport
import Postgres
import PushQueue
import Testing

/// Rows of several services in one queue (sql/015_services.sql): each service's input rules,
/// claims that read one service, and outcomes, dead tokens and health kept per service.
@Suite struct ServiceRowsTests {
    /// An FCM registration token: not hex, mixed case, with ':' and '-' as Firebase writes them.
    static let fcmToken = "fGx3Y-kQR0u:APA91bH" + String(repeating: "Zq9_", count: 30)
    static let apnsToken = String(repeating: "ab", count: 32)
    static let message = #"{"notification":{"title":"Hi","body":"there"},"data":{"k":"v"}}"#

    /// Each invalid FCM row and the rule that names what is wrong.
    static let cases: [(columns: String, values: [String?], constraint: String)] = [
        ("service, device_token, payload", ["fcm", "has space", message], "notifications_fcm_token_printable_ascii"),
        ("service, device_token, payload", ["fcm", "tab\there", message], "notifications_fcm_token_printable_ascii"),
        ("service, device_token, payload", ["fcm", String(repeating: "t", count: 4097), message],
         "notifications_fcm_token_printable_ascii"),
        ("service, channel_id, payload", ["fcm", "news/sport", message], "notifications_fcm_topic_name"),
        ("service, channel_id, payload", ["fcm", String(repeating: "t", count: 901), message], "notifications_fcm_topic_name"),
        ("service, device_token, payload", ["fcm", fcmToken, #"{"aps":{"alert":"x"}}"#], "notifications_fcm_payload_members"),
        ("service, device_token, payload", ["fcm", fcmToken, #"{"token":"another"}"#], "notifications_fcm_payload_members"),
        ("service, device_token, payload", ["fcm", fcmToken, #"{"data":{"n":1}}"#], "notifications_fcm_data_strings"),
        ("service, device_token, payload", ["fcm", fcmToken, #"{"data":["a"]}"#], "notifications_fcm_data_strings"),
        ("service, device_token, payload", ["fcm", fcmToken, #"{"android":"high"}"#], "notifications_fcm_android_object"),
        ("service, device_token, payload", ["fcm", fcmToken, #"{"data":{"s":"\#(String(repeating: "x", count: 4090))"}}"#],
         "notifications_payload_too_large"),
        // A topic message carries at most 2,048 bytes.
        ("service, channel_id, payload", ["fcm", "news", #"{"data":{"s":"\#(String(repeating: "x", count: 2040))"}}"#],
         "notifications_payload_too_large"),
        ("service, device_token, payload", ["gcm", fcmToken, message], "notifications_service_unknown"),
        ("service, device_token, payload", ["APNS", apnsToken, #"{"aps":{}}"#], "notifications_service_unknown"),
        ("service, device_token, channel_id, payload", ["fcm", fcmToken, "news", message],
         "notifications_exactly_one_of_device_token_and_channel_id"),
    ]

    @Test(arguments: 0..<cases.count)
    func invalidFCMRowIsRejectedByNamedRule(index: Int) throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let bad = Self.cases[index]
        let placeholders = (1...bad.values.count).map { "$\($0)" }.joined(separator: ", ")
        let error = try #require(throws: PostgresError.self) {
            try connection.query("INSERT INTO pgpush.notifications (\(bad.columns)) VALUES (\(placeholders))", bad.values)
        }
        #expect(error.sqlState == "23514")
        #expect(error.constraint == bad.constraint)
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 0)
    }

    /// What APNs would refuse, FCM takes, and the other way round: each service's rules hold
    /// for its own rows only.
    @Test func eachServiceIsCheckedByItsOwnRules() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        // Not hex, a payload without "aps", a topic name that is not base64: fine for FCM.
        try connection.query("INSERT INTO pgpush.notifications (service, device_token, payload) VALUES ('fcm', $1, $2)",
                             [Self.fcmToken, Self.message])
        try connection.query("INSERT INTO pgpush.notifications (service, channel_id, payload) VALUES ('fcm', 'news-1.x~%', $1)",
                             [Self.message])
        // Exactly 2,048 bytes to a topic and 4,096 to a token are in.
        let topicLimit = #"{"data":{"s":""# + String(repeating: "x", count: 2048 - 17) + #""}}"#
        let tokenLimit = #"{"data":{"s":""# + String(repeating: "x", count: 4096 - 17) + #""}}"#
        try connection.query("INSERT INTO pgpush.notifications (service, channel_id, payload) VALUES ('fcm', 'news', $1)",
                             [topicLimit])
        try connection.query("INSERT INTO pgpush.notifications (service, device_token, payload) VALUES ('fcm', $1, $2)",
                             [Self.fcmToken, tokenLimit])
        // FCM's members are no APNs payload: an APNs row still needs its own rules.
        let error = try #require(throws: PostgresError.self) {
            try connection.query("INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, $2)",
                                 [Self.fcmToken, Self.message])
        }
        #expect(["notifications_device_token_bad_length", "notifications_device_token_not_hex"].contains(error.constraint ?? ""))
        let services = try connection.query("SELECT service, count(*) FROM pgpush.notifications GROUP BY 1")
        #expect(services.rowCount == 1 && services.string(0, 0) == "fcm" && services.int(0, 1) == 4)
    }

    @Test func rowsAreAPNsUnlessTheyNameAService() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => '{\"aps\":{}}')", [Self.apnsToken])
        try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => $2::jsonb, service => 'fcm')",
                             [Self.fcmToken, Self.message])
        try connection.query("SELECT pgpush.enqueue(channel_id => 'news', payload => $1::jsonb, service => 'fcm')", [Self.message])
        try connection.query("SELECT * FROM pgpush.enqueue_many(device_tokens => $1, payload => $2::jsonb, service => 'fcm')",
                             [[Self.fcmToken + "2", Self.fcmToken + "3"], Self.message])
        let rows = try connection.query("SELECT service, push_type, count(*) FROM pgpush.notifications GROUP BY 1, 2 ORDER BY 1")
        #expect(rows.rowCount == 2)
        #expect(rows.string(0, 0) == "apns" && rows.int(0, 2) == 1)
        #expect(rows.string(1, 0) == "fcm" && rows.string(1, 1) == "alert" && rows.int(1, 2) == 4)
    }

    /// A worker claims the services it holds credentials for; the app's other rows wait.
    @Test func aClaimReadsOneService() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        try connection.query("INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, '{\"aps\":{}}')", [Self.apnsToken])
        let fcm = try connection.query("""
            INSERT INTO pgpush.notifications (service, device_token, payload, priority, collapse_id)
            VALUES ('fcm', $1, $2, 10, 'score') RETURNING id
            """, [Self.fcmToken, Self.message]).int64(0, 0)
        let claimed = try queue.claim(app: "default", service: .fcm, limit: 10, lease: .seconds(30)).claimed
        #expect(claimed.map(\.id) == [fcm].compactMap { $0 })
        let row = try #require(claimed.first?.notification)
        #expect(row.service == .fcm && row.deviceToken == Self.fcmToken && row.priority == 10 && row.collapseID == "score")
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications WHERE service = 'apns' AND status = 'queued'")
            .int(0, 0) == 1)
        #expect(try queue.claim(app: "default", service: .fcm, limit: 10, lease: .seconds(30)).claimed.isEmpty)
        #expect(try queue.claim(app: "default", limit: 10, lease: .seconds(30)).claimed.count == 1)
    }

    /// An FCM answer's message id and error message are kept; a dead FCM token is listed for
    /// FCM as written (registration tokens are case-sensitive) and suppresses the next row to
    /// it, while the same text as an APNs token is not listed.
    @Test func outcomesKeepTheServicesWordsAndListTokensPerService() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        for token in [Self.fcmToken, Self.fcmToken + "x", Self.fcmToken + "y"] {
            try connection.query("INSERT INTO pgpush.notifications (service, device_token, payload) VALUES ('fcm', $1, $2)",
                                 [token, Self.message])
        }
        let rows = try queue.claim(app: "default", service: .fcm, limit: 10, lease: .seconds(30)).claimed
        #expect(rows.count == 3)
        let name = "projects/demo/messages/0:1780000000001%abc"
        var delivered = Outcome.delivered(rows[0])
        delivered.messageID = name
        let dead = Outcome(id: rows[1].id, claimCount: rows[1].claimCount, disposition: .failed, httpStatus: 404,
                           reason: "UNREGISTERED", detail: "Requested entity was not found.", recordsError: true,
                           invalidatesToken: true)
        let refused = Outcome(id: rows[2].id, claimCount: rows[2].claimCount, disposition: .failed, httpStatus: 400,
                              reason: "INVALID_ARGUMENT", detail: "Invalid JSON payload received.", recordsError: true)
        #expect(try queue.complete([delivered]) == [rows[0].id])
        #expect(try queue.complete([dead, refused]) == [rows[1].id, rows[2].id])

        #expect(try connection.query("SELECT message_id FROM pgpush.notifications WHERE id = $1", [rows[0].id]).string(0, 0) == name)
        let errors = try connection.query("""
            SELECT service, reason, detail FROM pgpush.delivery_errors ORDER BY notification_id
            """)
        #expect(errors.rowCount == 2)
        #expect(errors.string(0, 0) == "fcm" && errors.string(0, 2) == "Requested entity was not found.")
        #expect(errors.string(1, 1) == "INVALID_ARGUMENT" && errors.string(1, 2) == "Invalid JSON payload received.")
        let listed = try connection.query("SELECT service, device_token, reason FROM pgpush.invalid_tokens")
        #expect(listed.rowCount == 1)
        #expect(listed.string(0, 0) == "fcm" && listed.string(0, 1) == Self.fcmToken + "x" && listed.string(0, 2) == "UNREGISTERED")

        // The next row to the dead token is not sent; a row to its lower-case twin is.
        for token in [Self.fcmToken + "x", (Self.fcmToken + "x").lowercased()] {
            try connection.query("INSERT INTO pgpush.notifications (service, device_token, payload) VALUES ('fcm', $1, $2)",
                                 [token, Self.message])
        }
        let next = try queue.claim(app: "default", service: .fcm, limit: 10, lease: .seconds(30))
        #expect(next.knownInvalidIDs.count == 1)
        #expect(next.claimed.map(\.notification.deviceToken) == [(Self.fcmToken + "x").lowercased()])
        // The application says the token works again, for FCM.
        #expect(try connection.query("SELECT pgpush.token_registered('default', $1)", [Self.fcmToken + "x"]).bool(0, 0) == false)
        #expect(try connection.query("SELECT pgpush.token_registered('default', $1, 'fcm')",
                                     [Self.fcmToken + "x"]).bool(0, 0) == true)
    }

    /// Rows of a service no live worker sends for are listed by app and service; a worker of
    /// the previous version (no `services`) serves its apps' APNs rows.
    @Test func unservedRowsAreListedPerService() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let queue = NotificationQueue(connection: connection, workerID: "apns-only")
        try connection.query("INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, '{\"aps\":{}}')", [Self.apnsToken])
        try connection.query("INSERT INTO pgpush.notifications (service, device_token, payload) VALUES ('fcm', $1, $2)",
                             [Self.fcmToken, Self.message])
        func unserved() throws -> [String] {
            let rows = try connection.query("SELECT app || '/' || service || '=' || due FROM pgpush.unserved_apps ORDER BY 1")
            return (0..<rows.rowCount).compactMap { rows.string($0, 0) }
        }
        #expect(try unserved() == ["default/apns=1", "default/fcm=1"])
        try queue.register(WorkerRecord(id: "apns-only", host: "h", pid: 1, version: "t", apps: ["default"], connections: 4))
        #expect(try unserved() == ["default/fcm=1"])
        try connection.query("""
            INSERT INTO pgpush.workers (id, host, pid, version, apps, connections) VALUES ('old', 'h', 2, '0.4.0', '{shop}', 4)
            """)
        try connection.query("INSERT INTO pgpush.notifications (app, device_token, payload) VALUES ('shop', $1, '{\"aps\":{}}')",
                             [Self.apnsToken])
        #expect(try unserved() == ["default/fcm=1"])
        try queue.register(WorkerRecord(id: "apns-only", host: "h", pid: 1, version: "t", apps: ["default"],
                                        services: ["default/apns", "default/fcm"], connections: 8))
        #expect(try unserved().isEmpty)
    }

    @Test func healthIsKeptPerAppAndService() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let registry = NotificationQueue(connection: connection, workerID: "w1")
        try registry.reportAppHealth(app: "shop", service: .fcm, healthy: false, reason: "PERMISSION_DENIED")
        try registry.reportAppHealth(app: "shop", healthy: true, reason: nil)
        try registry.reportAppHealth(app: "shop", service: .fcm, healthy: false, reason: "PERMISSION_DENIED")
        let rows = try connection.query("SELECT service, healthy, reason FROM pgpush.app_health WHERE app = 'shop' ORDER BY 1")
        #expect(rows.rowCount == 2)
        #expect(rows.string(0, 0) == "apns" && rows.bool(0, 1) == true)
        #expect(rows.string(1, 0) == "fcm" && rows.bool(1, 1) == false && rows.string(1, 2) == "PERMISSION_DENIED")
    }
}
