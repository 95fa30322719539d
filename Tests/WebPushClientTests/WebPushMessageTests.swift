import Foundation
import PGPushCore
import PushCrypto
import Testing
@testable import WebPushClient

/// A row's subscription and columns as a Web Push request: what is read from the
/// subscription, the headers each column gives, and a body the browser's keys open.
struct WebPushMessageTests {
    static let browser = try! P256KeyAgreementKey.generate()
    static let auth: [UInt8] = Array(0..<16)

    static func subscriptionJSON(endpoint: String = "https://fcm.googleapis.com/fcm/send/abc:APA91b",
                                 p256dh: String = Base64URL.encode(browser.publicKey), auth: String = Base64URL.encode(WebPushMessageTests.auth),
                                 expiration: String = "null") -> [UInt8] {
        Array(#"{"endpoint":"\#(endpoint)","expirationTime":\#(expiration),"keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#.utf8)
    }

    static func message(payload: String = #"{"title":"Hi"}"#, priority: Int? = nil, timeToLive: Int? = nil, deliverOnce: Bool = false,
                        topic: String? = nil) throws -> WebPushMessage {
        try WebPushMessage(subscription: WebPushSubscription(json: subscriptionJSON()), payload: Array(payload.utf8),
                           priority: priority, timeToLive: timeToLive, deliverOnce: deliverOnce, topic: topic)
    }

    static func header(_ name: String, of message: WebPushMessage) -> String? {
        message.headers.first { $0.name == name }?.value
    }

    @Test func aSubscriptionAsBrowsersGiveItIsRead() throws {
        for json in [Self.subscriptionJSON(), Self.subscriptionJSON(expiration: "1767225600000"),
                     // Standard base64 with padding, as some stored subscriptions have it.
                     Self.subscriptionJSON(p256dh: Data(Self.browser.publicKey).base64EncodedString(),
                                           auth: Data(Self.auth).base64EncodedString())] {
            let subscription = try WebPushSubscription(json: json)
            #expect(subscription.p256dh == Self.browser.publicKey && subscription.auth == Self.auth)
            #expect(subscription.endpoint.origin.description == "https://fcm.googleapis.com")
            #expect(subscription.endpoint.target == "/fcm/send/abc:APA91b")
        }
    }

    @Test func subscriptionsThatAreNotABrowsersAreRefusedWithAReason() {
        let key = Self.browser.publicKey
        let cases: [([UInt8], String)] = [
            (Array("[]".utf8), "InvalidSubscription"),
            (Array(#"{"keys":{}}"#.utf8), "InvalidSubscription"),
            (Self.subscriptionJSON(p256dh: Base64URL.encode(key.dropLast())), "InvalidSubscription"),
            (Self.subscriptionJSON(p256dh: Base64URL.encode([0x02] + key.dropFirst())), "InvalidSubscription"),
            (Self.subscriptionJSON(auth: Base64URL.encode(Self.auth.dropLast())), "InvalidSubscription"),
            (Self.subscriptionJSON(auth: "not base64!"), "InvalidSubscription"),
            (Self.subscriptionJSON(endpoint: "http://fcm.googleapis.com/fcm/send/x"), "EndpointNotAllowed"),
            (Self.subscriptionJSON(endpoint: "https://user@fcm.googleapis.com/x"), "EndpointNotAllowed"),
        ]
        for (json, reason) in cases {
            #expect {
                try WebPushSubscription(json: json)
            } throws: { error in
                (error as? WebPushRowError)?.reason == reason
            }
        }
    }

    @Test func theBodyOpensWithTheBrowsersKeysToThePayload() throws {
        let message = try Self.message(payload: #"{"title":"Hi","body":"là"}"#)
        let opened = try WebPushEncryption.open(message.body, recipient: Self.browser, auth: Self.auth)
        #expect(String(decoding: opened, as: UTF8.self) == #"{"title":"Hi","body":"là"}"#)
        #expect(Self.header("content-encoding", of: message) == "aes128gcm")
        #expect(Self.header("content-type", of: message) == "application/octet-stream")
        #expect(message.endpoint.target == "/fcm/send/abc:APA91b")
    }

    @Test func ttlFollowsExpiresAtAndDeliverOnce() throws {
        #expect(Self.header("ttl", of: try Self.message()) == "2419200")
        #expect(Self.header("ttl", of: try Self.message(timeToLive: 3600)) == "3600")
        #expect(Self.header("ttl", of: try Self.message(timeToLive: 90 * 86400)) == "2419200")
        #expect(Self.header("ttl", of: try Self.message(timeToLive: -5)) == "0")
        #expect(Self.header("ttl", of: try Self.message(timeToLive: 3600, deliverOnce: true)) == "0")
    }

    @Test func urgencyFollowsPriority() throws {
        #expect(Self.header("urgency", of: try Self.message(priority: 10)) == "high")
        #expect(Self.header("urgency", of: try Self.message(priority: 5)) == "normal")
        #expect(Self.header("urgency", of: try Self.message(priority: 1)) == "low")
        #expect(Self.header("urgency", of: try Self.message()) == "normal")
    }

    @Test func theTopicIsTheCollapseIDWhenPushServicesTakeIt() throws {
        #expect(Self.header("topic", of: try Self.message()) == nil)
        for topic in ["score", "match-42_final", String(repeating: "a", count: 32), "ab"] where topic.count % 4 != 1 {
            #expect(Self.header("topic", of: try Self.message(topic: topic)) == topic)
        }
        for topic in ["", "a b", "score!", String(repeating: "a", count: 33), "abcde", "é"] {
            #expect(throws: WebPushRowError.self) { try Self.message(topic: topic) }
        }
    }

    @Test func aPayloadOverOneRecordIsRefusedAndOneThatFillsItIsSent() throws {
        let fits = #"{"t":""# + String(repeating: "x", count: 3993 - 8) + #""}"#
        #expect(fits.utf8.count == 3993)
        #expect(try Self.message(payload: fits).body.count == 4096)
        #expect(throws: WebPushRowError.payloadTooLarge(size: 3994, limit: 3993)) {
            try Self.message(payload: #"{"t":""# + String(repeating: "x", count: 3993 - 7) + #""}"#)
        }
    }

    /// A p256dh of the right form that is no point on the curve fails the row, not the worker.
    @Test func aKeyOffTheCurveFailsTheRow() throws {
        let offCurve = [0x04] + Array(Self.browser.publicKey[1..<33]) + [UInt8](repeating: 7, count: 32)
        let subscription = try WebPushSubscription(json: Self.subscriptionJSON(p256dh: Base64URL.encode(offCurve)))
        #expect {
            try WebPushMessage(subscription: subscription, payload: Array("{}".utf8), priority: nil, timeToLive: nil,
                               deliverOnce: false, topic: nil)
        } throws: { error in
            (error as? WebPushRowError)?.reason == "InvalidSubscription"
        }
    }
}
