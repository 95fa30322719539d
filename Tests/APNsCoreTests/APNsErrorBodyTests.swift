import APNsCore
import Foundation
import PGPushCore
import Testing

struct APNsErrorBodyTests {
    static func parse(_ text: String) -> APNsErrorBody? {
        APNsErrorBody.parse(Array(text.utf8))
    }

    @Test func reasonOnly() {
        #expect(Self.parse(#"{"reason":"BadDeviceToken"}"#) == APNsErrorBody(reason: "BadDeviceToken", timestamp: nil))
    }

    @Test func unregisteredWithMillisecondTimestamp() throws {
        let body = try #require(Self.parse(#"{"reason": "Unregistered", "timestamp": 1700000000123}"#))
        #expect(body.reason == "Unregistered")
        let timestamp = try #require(body.timestamp)
        #expect(abs(timestamp.timeIntervalSince1970 - 1_700_000_000.123) < 0.0005)
    }

    @Test func oddFieldsAreIgnoredNotFatal() {
        #expect(Self.parse(#"{"reason": 5, "timestamp": "soon"}"#) == APNsErrorBody(reason: nil, timestamp: nil))
        #expect(Self.parse(#"{"timestamp": 1e400}"#) == APNsErrorBody(reason: nil, timestamp: nil))
        #expect(Self.parse(#"{"timestamp": -1e20}"#) == APNsErrorBody(reason: nil, timestamp: nil))
        #expect(Self.parse(#"{"other": [1, {"x": null}]}"#) == APNsErrorBody(reason: nil, timestamp: nil))
        #expect(Self.parse(#"{}"#) == APNsErrorBody(reason: nil, timestamp: nil))
    }

    @Test func escapedReasonIsDecoded() {
        #expect(Self.parse(#"{"reason": "Bad\u0054opic"}"#)?.reason == "BadTopic")
    }

    @Test(arguments: ["", "reason", "[]", "\"Unregistered\"", "{\"reason\":", "null", "{\"reason\":\"x\"} trailing"])
    func notAnObjectGivesNil(text: String) {
        #expect(Self.parse(text) == nil)
    }

    @Test func acceptsDataAndSlices() {
        let data = Data(#"{"reason":"Shutdown"}"#.utf8)
        #expect(APNsErrorBody.parse(data)?.reason == "Shutdown")
        #expect(APNsErrorBody.parse(data[data.startIndex...])?.reason == "Shutdown")
    }

    @Test func encodesWhatAPNsSends() {
        let body = APNsErrorBody(reason: "Unregistered", timestamp: Date(timeIntervalSince1970: 1_700_000_000.123))
        #expect(String(decoding: body.encoded(), as: UTF8.self) == #"{"reason":"Unregistered","timestamp":1700000000123}"#)
        #expect(String(decoding: APNsErrorBody(reason: "BadTopic", timestamp: nil).encoded(), as: UTF8.self) == #"{"reason":"BadTopic"}"#)
        #expect(APNsErrorBody(reason: nil, timestamp: nil).encoded() == Array("{}".utf8))
    }

    @Test func encodingRoundTripsAnyReason() {
        for reason in APNsReason.allCases.map(\.rawValue) + ["quote \" back\\slash", "ctl\u{1}\n", "é😀"] {
            let body = APNsErrorBody(reason: reason, timestamp: Date(timeIntervalSince1970: 1_600_000_000))
            #expect(APNsErrorBody.parse(body.encoded()) == body)
        }
    }
}
