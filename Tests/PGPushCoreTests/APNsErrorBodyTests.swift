import Foundation
import Testing
@testable import PGPushCore

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
}
