import APNsCore
import Foundation
import PGPushCore
import Testing

/// Channel rows become broadcasts to the app's channel (their wire form is in
/// `APNsWireRequestTests`), and Live Activity bodies must carry the fields Apple requires, on token and channel rows.
struct BroadcastRequestTests {
    static let channel = "dGhlIGNoYW5uZWw="
    static let apnsID = UUID(uuidString: "0A1B2C3D-4E5F-6A7B-8C9D-0E1F2A3B4C5D")!
    static let update = #"{"aps": {"event": "update", "timestamp": 1700000000, "content-state": {"score": "1-0"}}}"#
    static let start = #"{"aps": {"event": "start", "timestamp": 1, "content-state": {}, "attributes-type": "Match", "#
        + #""attributes": {}, "alert": {"title": "Kick-off"}}}"#

    static func row(channel: String? = channel, payload: String = update, priority: Int? = nil, topic: String? = nil,
                    expiration: Int64? = nil, deliverOnce: Bool? = nil, pushType: String = "liveactivity",
                    collapseID: String? = nil) -> PushNotification {
        PushNotification(id: 9, deviceToken: channel == nil ? String(repeating: "ab", count: 32) : "", pushType: pushType,
                         priority: priority, topic: topic, payload: Array(payload.utf8), collapseID: collapseID,
                         expiration: expiration, deliverOnce: deliverOnce, apnsID: apnsID, channelID: channel)
    }

    static func failure(_ row: PushNotification, authentication: AuthenticationMethod = .token) -> ValidationFailure.Reason? {
        do {
            _ = try row.validated(bundleID: "com.example.app", authentication: authentication)
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func channelRowBecomesABroadcastToTheAppsChannel() throws {
        let request = try Self.row(priority: 5, expiration: 1_900_000_000)
            .validated(bundleID: "com.example.app", authentication: .token)
        #expect(request.notificationID == 9)
        #expect(request.recipient == .channel(Self.channel))
        #expect(request.topic == "com.example.app")
        #expect(request.pushType == .liveactivity)
        #expect(request.priority == .powerAware)
        #expect(request.apnsID == Self.apnsID)
        #expect(request.expiration == 1_900_000_000)
        #expect(request.collapseID == nil)
        #expect(request.body == Array(#"{"aps":{"event":"update","timestamp":1700000000,"content-state":{"score":"1-0"}}}"#.utf8))
    }

    @Test func expirationAndPriorityAreAlwaysSet() throws {
        let plain = try Self.row().validated(bundleID: "com.example.app", authentication: .certificate)
        #expect(plain.expiration == 0 && plain.priority == .immediate)
        #expect(plain.collapseID == nil)
        // Delivered once (as the claim marks rows of a channel that stores nothing): 0 whatever expires_at says.
        #expect(try Self.row(expiration: 1_900_000_000, deliverOnce: true).validated(bundleID: "b", authentication: .token).expiration == 0)
        // An explicit topic is the bundle id the broadcast goes to.
        let other = try Self.row(topic: "com.other.app").validated(bundleID: "b", authentication: .token)
        #expect(other.topic == "com.other.app" && other.recipient == .channel(Self.channel))
    }

    @Test func channelRowsBreakingBroadcastRulesAreRefused() {
        #expect(Self.failure(Self.row(pushType: "alert")) == .invalidPushType)
        #expect(Self.failure(Self.row(channel: "not base64!")) == .badChannelID)
        #expect(Self.failure(Self.row(channel: "YQ===")) == .badChannelID)
        #expect(Self.failure(Self.row(channel: String(repeating: "A", count: 1025))) == .badChannelID)
        #expect(Self.failure(Self.row(priority: 1)) == .badPriority)
        #expect(Self.failure(Self.row(collapseID: "c")) == .badCollapseID)
        #expect(Self.failure(Self.row(payload: Self.start)) == .broadcastCannotStartLiveActivity)
        #expect(Self.failure(Self.row(channel: nil, payload: Self.start)) == nil)
    }

    @Test func broadcastPayloadsMayBe5120Bytes() {
        let filler = { (bytes: Int) in
            let empty = #"{"aps":{"event":"update","timestamp":1,"content-state":{"s":""}}}"#
            return #"{"aps":{"event":"update","timestamp":1,"content-state":{"s":""# + String(repeating: "x", count: bytes - empty.utf8.count) + #""}}}"#
        }
        #expect(Self.failure(Self.row(payload: filler(5120))) == nil)
        #expect(Self.failure(Self.row(payload: filler(5121))) == .payloadTooLarge)
        #expect(Self.failure(Self.row(channel: nil, payload: filler(4097))) == .payloadTooLarge)
    }

    /// Each missing field is named by the reason, on token rows and channel rows alike.
    @Test(arguments: [
        (#"{"aps": {"alert": "x"}}"#, ValidationFailure.Reason.liveActivityMissingEvent),
        (#"{"aps": {"event": "begin", "timestamp": 1, "content-state": {}}}"#, .liveActivityMissingEvent),
        (#"{"aps": {"event": "update", "content-state": {}}}"#, .liveActivityMissingTimestamp),
        (#"{"aps": {"event": "update", "timestamp": "1", "content-state": {}}}"#, .liveActivityMissingTimestamp),
        (#"{"aps": {"event": "update", "timestamp": 1}}"#, .liveActivityMissingContentState),
        (#"{"aps": {"event": "update", "timestamp": 1, "content-state": []}}"#, .liveActivityMissingContentState),
    ])
    func liveActivityFieldsAreRequired(payload: String, reason: ValidationFailure.Reason) {
        #expect(Self.failure(Self.row(payload: payload)) == reason)
        #expect(Self.failure(Self.row(channel: nil, payload: payload)) == reason)
    }

    @Test func aStartNeedsItsAttributesAndAnAlertAndAnEndNeedsNoState() {
        let token: String? = nil
        #expect(Self.failure(Self.row(channel: token, payload: #"{"aps": {"event": "start", "timestamp": 1, "content-state": {}, "alert": "a"}}"#))
                == .liveActivityMissingAttributes)
        #expect(Self.failure(Self.row(channel: token, payload: #"{"aps": {"event": "start", "timestamp": 1, "content-state": {}, "attributes-type": "M", "attributes": {}}}"#))
                == .liveActivityMissingAlert)
        #expect(Self.failure(Self.row(payload: #"{"aps": {"event": "end", "timestamp": 1, "dismissal-date": 2}}"#)) == nil)
    }
}
