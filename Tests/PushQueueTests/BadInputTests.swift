import Foundation
import PGPushTestSupport
import Postgres
import PushQueue
import Testing

@Suite struct BadInputTests {
    static let token = String(repeating: "ab", count: 32)
    static let channel = "dGhlIGNoYW5uZWwgaWQ="
    /// A Live Activity update with every field it needs.
    static let liveActivityUpdate = #"{"aps":{"event":"update","timestamp":1700000000,"content-state":{"score":"1-0"}}}"#

    /// Each invalid row and the constraint whose name says what is wrong.
    static let cases: [(columns: String, values: [String?], constraint: String)] = [
        ("device_token, payload", ["xyz0", #"{"aps":{}}"#], "notifications_device_token_not_hex"),
        ("device_token, payload", ["abc", #"{"aps":{}}"#], "notifications_device_token_bad_length"),
        ("device_token, payload", ["", #"{"aps":{}}"#], "notifications_device_token_bad_length"),
        ("device_token, payload", [String(repeating: "a", count: 402), #"{"aps":{}}"#], "notifications_device_token_bad_length"),
        ("device_token, payload, push_type", [token, #"{"aps":{}}"#, "email"], "notifications_push_type_unknown"),
        ("device_token, payload, priority", [token, #"{"aps":{}}"#, "7"], "notifications_priority_not_1_5_10"),
        ("device_token, payload, push_type, priority",
         [token, #"{"aps":{"content-available":1}}"#, "background", "10"], "notifications_background_priority_must_be_5"),
        ("device_token, payload, push_type", [token, #"{"aps":{"alert":"hi"}}"#, "background"],
         "notifications_background_needs_content_available"),
        ("device_token, payload", [token, #"[1,2]"#], "notifications_payload_not_object"),
        ("device_token, payload", [token, #""text""#], "notifications_payload_not_object"),
        ("device_token, payload", [token, #"{"aps":{"alert":"\#(String(repeating: "x", count: 4090))"}}"#],
         "notifications_payload_too_large"),
        ("device_token, payload, push_type", [token, #"{"aps":{"alert":"\#(String(repeating: "x", count: 5110))"}}"#, "voip"],
         "notifications_payload_too_large"),
        ("device_token, payload, collapse_id", [token, #"{"aps":{}}"#, String(repeating: "c", count: 65)],
         "notifications_collapse_id_too_long"),
        ("device_token, payload, collapse_id", [token, #"{"aps":{}}"#, String(repeating: "é", count: 33)],
         "notifications_collapse_id_too_long"),
        ("device_token, payload, push_type", [token, #"{"aps":{}}"#, "mdm"], "notifications_mdm_needs_topic"),
        ("device_token, payload, topic", [token, #"{"aps":{}}"#, ""], "notifications_topic_empty"),
        ("device_token, payload, status", [token, #"{"aps":{}}"#, "done"], "notifications_status_unknown"),
        ("device_token, payload, push_type, priority", [token, #"{"aps":{}}"#, "pushtotalk", "5"],
         "notifications_pushtotalk_priority_10_or_service_update_5"),
        ("device_token, payload, push_type, priority", [token, #"{"aps":{"ptt-push-type":"service-update"}}"#, "pushtotalk", "1"],
         "notifications_pushtotalk_priority_10_or_service_update_5"),
        ("device_token, payload, push_type, priority", [token, liveActivityUpdate, "liveactivity", "1"],
         "notifications_liveactivity_priority_must_be_5_or_10"),
        ("device_token, payload, push_type, priority", [token, #"{"aps":{}}"#, "location", "1"],
         "notifications_location_priority_must_be_5_or_10"),
        // sql/006_input_rules.sql. Before it, every one of these rows was accepted.
        ("device_token, payload, app", [token, #"{"aps":{}}"#, "shop\n"], "notifications_app_name_1_to_64_letters_digits_dot_dash"),
        ("device_token, payload, app", [token, #"{"aps":{}}"#, "sh'op"], "notifications_app_name_1_to_64_letters_digits_dot_dash"),
        ("device_token, payload, app", [token, #"{"aps":{}}"#, "\u{1B}[31mshop"], "notifications_app_name_1_to_64_letters_digits_dot_dash"),
        ("device_token, payload, app", [token, #"{"aps":{}}"#, String(repeating: "a", count: 65)],
         "notifications_app_name_1_to_64_letters_digits_dot_dash"),
        // What failed pg_notify with "payload string too long" before.
        ("device_token, payload, app", [token, #"{"aps":{}}"#, String(repeating: "a", count: 10_000)],
         "notifications_app_name_1_to_64_letters_digits_dot_dash"),
        ("device_token, payload, send_after", [token, #"{"aps":{}}"#, "-infinity"], "notifications_send_after_infinite"),
        ("device_token, payload, send_after", [token, #"{"aps":{}}"#, "infinity"], "notifications_send_after_infinite"),
        ("device_token, payload, expires_at", [token, #"{"aps":{}}"#, "infinity"], "notifications_expires_at_infinite"),
        ("device_token, payload, topic", [token, #"{"aps":{}}"#, "com.example\r\nx-evil: 1"], "notifications_topic_control_character"),
        ("device_token, payload, topic", [token, #"{"aps":{}}"#, "com.example\u{9B}31m"], "notifications_topic_control_character"),
        ("device_token, payload, collapse_id", [token, #"{"aps":{}}"#, "a\u{7F}b"], "notifications_collapse_id_control_character"),
        ("device_token, payload, collapse_id", [token, #"{"aps":{}}"#, "a\tb"], "notifications_collapse_id_control_character"),
        ("device_token, payload", [token, nested(depth: 65)], "notifications_payload_nested_deeper_than_64"),
        // 10,000 levels: the size rule used to recurse on it until "stack depth limit exceeded".
        ("device_token, payload", [token, nested(depth: 10_000)], "notifications_payload_nested_deeper_than_64"),
        // sql/010_broadcast_channels.sql: channel rows, and the fields a Live Activity needs.
        ("payload", [#"{"aps":{}}"#], "notifications_exactly_one_of_device_token_and_channel_id"),
        ("device_token, channel_id, payload, push_type", [token, channel, liveActivityUpdate, "liveactivity"],
         "notifications_exactly_one_of_device_token_and_channel_id"),
        ("channel_id, payload", [channel, #"{"aps":{"alert":"a"}}"#], "notifications_channel_only_liveactivity"),
        ("channel_id, payload, push_type", ["not base64!", liveActivityUpdate, "liveactivity"],
         "notifications_channel_id_not_base64"),
        ("channel_id, payload, push_type, collapse_id", [channel, liveActivityUpdate, "liveactivity", "c"],
         "notifications_channel_without_collapse_id"),
        ("channel_id, payload, push_type, priority", [channel, liveActivityUpdate, "liveactivity", "1"],
         "notifications_liveactivity_priority_must_be_5_or_10"),
        ("channel_id, payload, push_type",
         [channel, #"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{},"alert":"a"}}"#,
          "liveactivity"], "notifications_channel_cannot_start_liveactivity"),
        ("channel_id, payload, push_type", [channel, #"{"aps":{"timestamp":1,"content-state":{}}}"#, "liveactivity"],
         "notifications_liveactivity_event_start_update_or_end"),
        ("device_token, payload, push_type", [token, #"{"aps":{"event":"begin","timestamp":1,"content-state":{}}}"#, "liveactivity"],
         "notifications_liveactivity_event_start_update_or_end"),
        ("device_token, payload, push_type", [token, #"{"aps":{"event":"update","content-state":{}}}"#, "liveactivity"],
         "notifications_liveactivity_needs_timestamp"),
        ("channel_id, payload, push_type", [channel, #"{"aps":{"event":"update","timestamp":"1"}}"#, "liveactivity"],
         "notifications_liveactivity_needs_timestamp"),
        ("device_token, payload, push_type", [token, #"{"aps":{"event":"update","timestamp":1}}"#, "liveactivity"],
         "notifications_liveactivity_start_or_update_needs_content_state"),
        ("device_token, payload, push_type",
         [token, #"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes":{},"alert":"a"}}"#, "liveactivity"],
         "notifications_liveactivity_start_needs_attributes"),
        ("device_token, payload, push_type",
         [token, #"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{}}}"#, "liveactivity"],
         "notifications_liveactivity_start_needs_alert"),
        // A broadcast may carry 5,120 bytes, one byte more is refused.
        ("channel_id, payload, push_type", [channel, liveActivity(bytes: 5121), "liveactivity"], "notifications_payload_too_large"),
    ]

    /// A Live Activity update whose compact JSON is exactly `bytes` long.
    static func liveActivity(bytes: Int) -> String {
        let empty = #"{"aps":{"event":"update","timestamp":1,"content-state":{"s":""}}}"#
        return #"{"aps":{"event":"update","timestamp":1,"content-state":{"s":""#
            + String(repeating: "x", count: bytes - empty.utf8.count) + #""}}}"#
    }

    /// A JSON object nesting `depth` levels: the object, then arrays.
    static func nested(depth: Int) -> String {
        "{\"a\":" + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}"
    }

    @Test(arguments: 0..<cases.count)
    func invalidInsertIsRejectedByNamedConstraint(index: Int) throws {
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

    @Test func priorityRulesOfPushToTalkLiveActivityAndLocationLetGoodRowsIn() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let serviceUpdate = #"{"aps":{"ptt-push-type":"service-update"}}"#
        let accepted: [(payload: String, pushType: String, priority: String?)] = [
            (serviceUpdate, "pushtotalk", "5"), (serviceUpdate, "pushtotalk", "10"), (#"{"aps":{}}"#, "pushtotalk", "10"),
            (#"{"aps":{}}"#, "pushtotalk", nil), (Self.liveActivityUpdate, "liveactivity", "5"),
            (Self.liveActivityUpdate, "liveactivity", "10"),
            (Self.liveActivityUpdate, "liveactivity", nil), (#"{"aps":{}}"#, "location", "5"), (#"{"aps":{}}"#, "location", nil),
            (#"{"aps":{}}"#, "alert", "1"),
        ]
        for row in accepted {
            try connection.query("INSERT INTO pgpush.notifications (device_token, payload, push_type, priority) VALUES ($1, $2, $3, $4)",
                                 [Self.token, row.payload, row.pushType, row.priority])
        }
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == accepted.count)
    }

    /// The limits of 006 let the largest allowed values in.
    @Test func inputRulesLetTheirLimitsIn() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let accepted: [(app: String, payload: String, topic: String?, collapseID: String?)] = [
            (String(repeating: "A", count: 64), #"{"aps":{}}"#, nil, nil),
            ("shop.eu_2-b", Self.nested(depth: 64), "com.example.app", "coll-1 é"),
            ("x", #"{"aps":{"alert":"tab\tnewline\n"}}"#, "com.example.app.voip", String(repeating: "c", count: 64)),
        ]
        for row in accepted {
            try connection.query("""
                INSERT INTO pgpush.notifications (device_token, app, payload, topic, collapse_id, expires_at, send_after)
                VALUES ($1, $2, $3, $4, $5, now() + interval '1 day', now())
                """, [Self.token, row.app, row.payload, row.topic, row.collapseID])
        }
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == accepted.count)
        let depths = try connection.query("""
            SELECT pgpush.jsonb_nesting_depth('1', 64), pgpush.jsonb_nesting_depth('{}', 64),
                   pgpush.jsonb_nesting_depth('{"a":[1,{"b":[]}],"c":2}', 64), pgpush.jsonb_nesting_depth($1::jsonb, 64)
            """, [Self.nested(depth: 10_000)])
        #expect([depths.int(0, 0), depths.int(0, 1), depths.int(0, 2), depths.int(0, 3)] == [0, 1, 4, 65])
    }

    @Test func payloadLimitCountsCompactBytesNotJsonbText() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        // jsonb prints a blank after every ':' and ',', so this payload's text form
        // is over 4096 bytes while its compact form (what APNs gets) is exactly 4096.
        let keys = (0..<400).map { String(format: "\"k%03d\":1", $0) }.joined(separator: ",")
        let prefix = "{\"aps\":{\"alert\":\"\",\"x\":{" + keys + "}}"
        let filler = 4096 - prefix.utf8.count - "}".utf8.count
        let payload = prefix.replacingOccurrences(of: "\"alert\":\"\"", with: "\"alert\":\"" + String(repeating: "y", count: filler) + "\"") + "}"
        #expect(payload.utf8.count == 4096)
        let id = try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => $2::jsonb)", [Self.token, payload])
        #expect(id.int64(0, 0) != nil)
        let lengths = try connection.query("SELECT octet_length(payload::text), pgpush.compact_json_length(payload) FROM pgpush.notifications")
        #expect((lengths.int(0, 0) ?? 0) > 4096)
        #expect(lengths.int(0, 1) == 4096)
        let oneMore = payload.replacingOccurrences(of: "\"alert\":\"y", with: "\"alert\":\"yy")
        let error = try #require(throws: PostgresError.self) {
            try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => $2::jsonb)", [Self.token, oneMore])
        }
        #expect(error.constraint == "notifications_payload_too_large")
    }

    @Test func enqueueRaisesTheSameNamedErrors() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let error = try #require(throws: PostgresError.self) {
            try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => '{}', priority => 3)", [Self.token])
        }
        #expect(error.constraint == "notifications_priority_not_1_5_10")
        let badToken = try #require(throws: PostgresError.self) {
            try connection.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{}')", [[Self.token, "nothex"]])
        }
        #expect(badToken.constraint == "notifications_device_token_not_hex")
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) == 0)
    }

    @Test func validRowsTakeTheirDefaults() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        try connection.query("INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, '{\"aps\":{\"alert\":\"hi\"}}')",
                             [Self.token.uppercased()])
        let row = try connection.query("""
            SELECT app, push_type, priority IS NULL, topic IS NULL, status, attempts, apns_id IS NOT NULL,
                   send_after <= now(), finished_at IS NULL
              FROM pgpush.notifications
            """)
        #expect(row.string(0, 0) == "default")
        #expect(row.string(0, 1) == "alert")
        #expect(row.bool(0, 2) == true)
        #expect(row.bool(0, 3) == true)
        #expect(row.string(0, 4) == "queued")
        #expect(row.int(0, 5) == 0)
        #expect(row.bool(0, 6) == true)
        #expect(row.bool(0, 7) == true)
        #expect(row.bool(0, 8) == true)
    }
}
