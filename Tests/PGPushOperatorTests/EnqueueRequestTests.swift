import Foundation
import PGPushOperator
import PGPushTestSupport
import Postgres
import Testing

/// `pgpush enqueue`: its flags, and rejected rows explained in words.
@Suite struct EnqueueRequestTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let token = String(repeating: "ab", count: 32)

    @Test func alertBuildsTheAPSPayloadWithEscaping() throws {
        let request = try EnqueueRequest(flags: ["token": Self.token, "alert": "Say \"hi\"\n"])
        #expect(request.tokens == [Self.token])
        #expect(request.payload == #"{"aps":{"alert":"Say \"hi\"\n"}}"#)
        #expect(request.app == nil && request.pushType == nil && request.priority == nil)
    }

    @Test func everyColumnFlagIsRead() throws {
        let request = try EnqueueRequest(flags: [
            "token": Self.token, "payload": #"{"aps":{"content-available":1}}"#, "app": "shop", "push-type": "background",
            "priority": "5", "topic": "com.example.shop", "collapse-id": "sale", "expires-at": "2027-01-15T08:00:00Z",
            "send-after": "+90s", "idempotency-key": "order-17",
        ], now: Self.now)
        #expect(request.app == "shop" && request.pushType == "background" && request.priority == 5)
        #expect(request.topic == "com.example.shop" && request.collapseID == "sale" && request.idempotencyKey == "order-17")
        #expect(request.expiresAt == ISO8601DateFormatter().date(from: "2027-01-15T08:00:00Z"))
        #expect(request.sendAfter == Self.now.addingTimeInterval(90))
    }

    @Test func timesAcceptISOUnixAndRelative() throws {
        #expect(try EnqueueRequest.time("1767323045", flag: "send-after") == Date(timeIntervalSince1970: 1_767_323_045))
        #expect(try EnqueueRequest.time("2026-01-02T03:04:05.250+01:00", flag: "x")
                == Date(timeIntervalSince1970: 1_767_319_445.25))
        #expect(try EnqueueRequest.time("-1m", flag: "x", now: Self.now) == Self.now.addingTimeInterval(-60))
        #expect(try EnqueueRequest.time("+2h", flag: "x", now: Self.now) == Self.now.addingTimeInterval(7200))
        #expect(throws: EnqueueUsageError.self) { try EnqueueRequest.time("tomorrow", flag: "expires-at") }
        #expect(throws: EnqueueUsageError.self) { try EnqueueRequest.time("+5y", flag: "expires-at") }
    }

    @Test func wrongFlagCombinationsAreUsageErrors() {
        #expect(throws: EnqueueUsageError.self) { try EnqueueRequest(flags: ["alert": "hi"]) }
        #expect(throws: EnqueueUsageError.self) { try EnqueueRequest(flags: ["token": Self.token]) }
        #expect(throws: EnqueueUsageError.self) { try EnqueueRequest(flags: ["token": Self.token, "alert": "a", "payload": "{}"]) }
        #expect(throws: EnqueueUsageError.self) { try EnqueueRequest(flags: ["token": Self.token, "alert": "a", "priority": "high"]) }
        #expect(throws: EnqueueUsageError.self) {
            try EnqueueRequest(flags: ["tokens-file": "empty.txt", "alert": "a"], tokensFromList: [])
        }
    }

    @Test func tokensFileSkipsBlanksAndComments() {
        #expect(EnqueueRequest.tokens(fromList: "# devices\naa01\n\n  bb02  \r\ncc03") == ["aa01", "bb02", "cc03"])
    }

    @Test func enqueuesOneOrManyAndHonoursTheIdempotencyKey() throws {
        let database = try PostgresConnection(conninfo: try TestDatabase.migrated())
        var single = try EnqueueRequest(flags: ["token": Self.token.uppercased(), "alert": "hi", "app": "shop",
                                                "idempotency-key": "k1", "expires-at": "+1h"])
        let first = try single.enqueue(on: database)
        #expect(first.count == 1)
        #expect(try single.enqueue(on: database) == first)
        single.idempotencyKey = nil

        let many = try EnqueueRequest(flags: ["alert": "all", "push-type": "voip", "tokens-file": "-"],
                                      tokensFromList: ["aa01", "bb02", "cc03"])
        let ids = try many.enqueue(on: database)
        #expect(ids.count == 3)
        let rows = try database.query("""
            SELECT count(*) FILTER (WHERE app = 'default' AND push_type = 'voip'),
                   count(*) FILTER (WHERE app = 'shop' AND expires_at > now() + interval '59 minutes'),
                   min(payload::text)
              FROM pgpush.notifications
            """)
        #expect(rows.int(0, 0) == 3 && rows.int(0, 1) == 1)
        #expect(rows.string(0, 2) == #"{"aps": {"alert": "all"}}"#)
    }

    @Test(arguments: [
        (["token": "zz11"], "characters other than hex digits"),
        (["token": "abc"], "even number of hex digits"),
        (["push-type": "banner"], "push type is not one APNs knows"),
        (["priority": "7"], "priority must be 10, 5 or 1"),
        (["push-type": "background", "priority": "10", "payload": #"{"aps":{"content-available":1}}"#], "background push must have priority 5"),
        (["push-type": "background"], "needs \"content-available\": 1"),
        (["payload": "[1,2]"], "must be a JSON object"),
        (["payload": "{not json"], "not valid JSON"),
        (["collapse-id": String(repeating: "c", count: 65)], "collapse id must be 1 to 64 bytes"),
    ])
    func rejectedRowsAreExplained(flags: [String: String], sentence: String) throws {
        let database = try PostgresConnection(conninfo: try TestDatabase.migrated())
        var all = ["token": Self.token, "alert": "hi"]
        if flags["payload"] != nil { all["alert"] = nil }
        all.merge(flags) { $1 }
        let request = try EnqueueRequest(flags: all)
        let error = try #require(throws: PostgresError.self) { try request.enqueue(on: database) }
        let explanation = try #require(ConstraintExplanation.explain(error))
        #expect(explanation.contains(sentence), "\(explanation)")
    }

    @Test func connectionProblemsAreNotExplainedAway() {
        #expect(ConstraintExplanation.explain(PostgresError(kind: .connection, message: "server closed the connection")) == nil)
        #expect(ConstraintExplanation.explain(PostgresError(kind: .server, message: "x", sqlState: "23514", constraint: "other_rule"))
                == "the row breaks the rule other_rule (constraint other_rule)")
        // An application role enqueueing for an app it was not granted (sql/007_per_app_access.sql).
        let refused = PostgresError(kind: .server, message: "new row violates row-level security policy for table \"notifications\"",
                                    sqlState: "42501", constraint: nil)
        #expect(ConstraintExplanation.explain(refused)?.contains("pgpush.grant_app") == true)
        #expect(ConstraintExplanation.explain(PostgresError(kind: .server, message: "permission denied for table notifications",
                                                            sqlState: "42501", constraint: nil)) == nil)
    }
}

@Suite struct FCMEnqueueTests {
    /// `pgpush enqueue --service fcm` inserts an FCM row; its text becomes FCM's notification,
    /// and a rule of FCM's is explained in words.
    @Test func anFCMRowFromTheCommandLine() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let request = try EnqueueRequest(flags: ["service": "fcm", "token": "fGx3:APA91bMixedCase", "alert": "Hi there"])
        #expect(request.payload == #"{"notification":{"body":"Hi there"}}"#)
        let ids = try request.enqueue(on: connection)
        let row = try connection.query("SELECT service, device_token, payload::text FROM pgpush.notifications WHERE id = $1", [ids.first])
        #expect(row.string(0, 0) == "fcm" && row.string(0, 1) == "fGx3:APA91bMixedCase")
        let bad = try EnqueueRequest(flags: ["service": "fcm", "token": "t", "payload": #"{"aps":{"alert":"x"}}"#])
        let error = try #require(throws: PostgresError.self) { try bad.enqueue(on: connection) }
        #expect(ConstraintExplanation.explain(error)?.contains("only notification, data, android") == true)
    }
}
