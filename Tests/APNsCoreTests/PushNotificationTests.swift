import APNsCore
import Foundation
import PGPushCore
import Testing

struct PushNotificationTests {
    static let token = String(repeating: "AB", count: 32)
    static let apnsID = UUID(uuidString: "0A1B2C3D-4E5F-6A7B-8C9D-0E1F2A3B4C5D")!

    static func notification(
        pushType: String = "alert", priority: Int? = nil, topic: String? = nil,
        payload: String = #"{"aps": {"alert": "hi"}}"#, collapseID: String? = nil, expiration: Int64? = nil,
        token: String = token
    ) -> PushNotification {
        PushNotification(
            id: 42, app: "default", deviceToken: token, pushType: pushType, priority: priority, topic: topic,
            payload: Array(payload.utf8), collapseID: collapseID, expiration: expiration, apnsID: apnsID)
    }

    static func failure(
        _ notification: PushNotification, bundleID: String? = "com.example.app", authentication: AuthenticationMethod = .token
    ) -> ValidationFailure? {
        do {
            _ = try notification.validated(bundleID: bundleID, authentication: authentication)
            return nil
        } catch {
            return error
        }
    }

    @Test func validAlertBecomesARequest() throws {
        let request = try Self.notification().validated(bundleID: "com.example.app", authentication: .token)
        #expect(request.notificationID == 42)
        #expect(request.recipient == .device(try DeviceToken(validating: String(repeating: "ab", count: 32))))
        #expect(request.pushType == .alert)
        #expect(request.priority == .immediate)
        #expect(request.topic == "com.example.app")
        #expect(request.apnsID == Self.apnsID)
        #expect(request.body == Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        #expect(request.expiration == nil)
        #expect(request.collapseID == nil)
    }

    static let silent = #"{"aps": {"content-available": 1}}"#
    static let liveActivity = #"{"aps": {"event": "update", "timestamp": 1, "content-state": {}}}"#

    @Test(arguments: PushType.allCases)
    func derivesTopicAndPriorityPerPushType(type: PushType) throws {
        let notification = Self.notification(
            pushType: type.rawValue, topic: type == .mdm ? "com.apple.mgmt.External.1234" : nil,
            payload: type == .background ? Self.silent : type == .liveactivity ? Self.liveActivity : #"{"aps": {}}"#)
        let request = try notification.validated(bundleID: "com.example.app", authentication: .token)
        #expect(request.pushType == type)
        #expect(request.priority == type.defaultPriority)
        #expect(request.topic == (type.derivedTopic(bundleID: "com.example.app") ?? "com.apple.mgmt.External.1234"))
    }

    @Test(arguments: PushType.allCases)
    func prioritiesOutsideTheTypesTableAreRejected(type: PushType) {
        let payload = type == .background ? Self.silent : type == .pushtotalk ? Self.serviceUpdate
            : type == .liveactivity ? Self.liveActivity : "{}"
        let topic = type == .mdm ? "mdm-topic" : nil
        for value in [-1, 0, 2, 4, 6, 9, 11, 100] {
            let failure = Self.failure(Self.notification(pushType: type.rawValue, priority: value, topic: topic, payload: payload))
            #expect(failure?.reason == .badPriority)
        }
        for priority in APNsPriority.allCases {
            let failure = Self.failure(Self.notification(pushType: type.rawValue, priority: priority.rawValue, topic: topic, payload: payload))
            if type.allowedPriorities.contains(priority) {
                #expect(failure == nil)
            } else {
                #expect(failure?.reason == .badPriority)
            }
        }
    }

    static let serviceUpdate = #"{"aps":{"ptt-push-type":"service-update"}}"#

    @Test func pushToTalkIsSentOnceAtPriority10() throws {
        let request = try Self.notification(pushType: "pushtotalk", payload: #"{"speaker":"Ann"}"#)
            .validated(bundleID: "com.example.app", authentication: .token)
        #expect(request.priority == .immediate)
        #expect(request.expiration == 0)
        let audioAt5 = Self.failure(Self.notification(pushType: "pushtotalk", priority: 5, payload: #"{"speaker":"Ann"}"#))
        #expect(audioAt5?.reason == .badPriority)
        #expect(Self.failure(Self.notification(pushType: "pushtotalk", priority: 5, payload: Self.serviceUpdate)) == nil)
    }

    @Test func deliverOnceSendsExpirationZeroAndOtherwiseTheRowsExpiry() throws {
        var notification = Self.notification(pushType: "alert")
        notification.expiration = 1_900_000_000
        #expect(try notification.validated(bundleID: "com.example.app", authentication: .token).expiration == 1_900_000_000)
        notification.deliverOnce = true
        #expect(try notification.validated(bundleID: "com.example.app", authentication: .token).expiration == 0)
        var talk = Self.notification(pushType: "pushtotalk")
        talk.deliverOnce = false
        #expect(try talk.validated(bundleID: "com.example.app", authentication: .token).expiration == nil)
    }

    @Test func backgroundWithPriority10IsRejected() {
        let failure = Self.failure(Self.notification(pushType: "background", priority: 10, payload: Self.silent))
        #expect(failure == ValidationFailure(.badPriority, "background pushes allow priority 5, got 10"))
    }

    @Test func unknownPushTypeIsRejected() {
        #expect(Self.failure(Self.notification(pushType: "banner"))?.reason == .invalidPushType)
        #expect(Self.failure(Self.notification(pushType: "Alert"))?.reason == .invalidPushType)
    }

    @Test func badTokenIsRejected() {
        #expect(Self.failure(Self.notification(token: "xyz0"))?.reason == .badDeviceToken)
        #expect(Self.failure(Self.notification(token: "abc"))?.reason == .badDeviceToken)
    }

    @Test func explicitTopicIsUsedAsGiven() throws {
        let request = try Self.notification(pushType: "voip", topic: "com.other.app").validated(
            bundleID: "com.example.app", authentication: .token)
        #expect(request.topic == "com.other.app")
    }

    @Test func missingTopic() {
        #expect(Self.failure(Self.notification(pushType: "mdm"))?.reason == .missingTopic)
        #expect(Self.failure(Self.notification(), bundleID: nil)?.reason == .missingTopic)
        #expect(Self.failure(Self.notification(topic: "com.example.app"), bundleID: nil) == nil)
    }

    @Test(arguments: ["", "has space", "new\nline", "tab\t", "é", String(repeating: "a", count: 256)])
    func badTopics(topic: String) {
        #expect(Self.failure(Self.notification(topic: topic))?.reason == .badTopic)
    }

    @Test func badBundleIDIsABadTopic() {
        #expect(Self.failure(Self.notification(), bundleID: "com.example app")?.reason == .badTopic)
    }

    @Test(arguments: PushType.allCases)
    func tokenOnlyTypesNeedTokenAuthentication(type: PushType) {
        let notification = Self.notification(
            pushType: type.rawValue, topic: type == .mdm ? "mdm-topic" : nil,
            payload: type == .background ? Self.silent : "{}")
        let failure = Self.failure(notification, authentication: .certificate)
        #expect(failure?.reason == (type.requiresTokenAuthentication ? .tokenAuthenticationRequired : nil))
    }

    @Test func collapseIDLimits() throws {
        let sixtyFour = String(repeating: "c", count: 64)
        let request = try Self.notification(collapseID: sixtyFour).validated(bundleID: "b", authentication: .token)
        #expect(request.collapseID == sixtyFour)
        #expect(Self.failure(Self.notification(collapseID: sixtyFour + "c"))?.reason == .badCollapseID)
        // 32 two-byte characters are 64 bytes; one more is 66.
        #expect(Self.failure(Self.notification(collapseID: String(repeating: "é", count: 32))) == nil)
        #expect(Self.failure(Self.notification(collapseID: String(repeating: "é", count: 33)))?.reason == .badCollapseID)
        #expect(Self.failure(Self.notification(collapseID: ""))?.reason == .badCollapseID)
        #expect(Self.failure(Self.notification(collapseID: "a\r\nb"))?.reason == .badCollapseID)
    }

    @Test func expiration() throws {
        #expect(try Self.notification(expiration: 0).validated(bundleID: "b", authentication: .token).expiration == 0)
        #expect(try Self.notification(expiration: 1_900_000_000).validated(bundleID: "b", authentication: .token).expiration == 1_900_000_000)
        #expect(Self.failure(Self.notification(expiration: -1))?.reason == .badExpirationDate)
    }

    @Test func payloadFailuresSurface() {
        #expect(Self.failure(Self.notification(payload: "[1]"))?.reason == .invalidPayload)
        #expect(Self.failure(Self.notification(pushType: "background", payload: #"{"aps":{"alert":"x"}}"#))?.reason == .badBackgroundPayload)
    }

    @Test func reasonStringsAreStable() {
        #expect(ValidationFailure.Reason.allCases.map(\.rawValue) == [
            "InvalidPushType", "BadDeviceToken", "BadPriority", "MissingTopic", "BadTopic",
            "TokenAuthenticationRequired", "InvalidPayload", "PayloadTooLarge", "BadBackgroundPayload",
            "BadCollapseId", "BadExpirationDate", "BadChannelId", "LiveActivityMissingEvent", "LiveActivityMissingTimestamp",
            "LiveActivityMissingContentState", "LiveActivityMissingAttributes", "LiveActivityMissingAlert",
            "BroadcastCannotStartLiveActivity",
        ])
        #expect(ValidationFailure(.badTopic, "m").description == "BadTopic: m")
    }
}
