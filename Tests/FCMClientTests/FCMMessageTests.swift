import FCMClient
import Foundation
import Testing

@Suite("FCM messages: the row's payload, its target and what its columns say for Android")
struct FCMMessageTests {
    func message(_ payload: String, target: FCMMessage.Target = .token("fcm-token:APA91b"), priority: Int? = nil,
                 timeToLive: Int? = nil, deliverOnce: Bool = false, collapseID: String? = nil) throws -> [String: Any] {
        let built = try FCMMessage(target: target, payload: Array(payload.utf8), priority: priority, timeToLive: timeToLive,
                                   deliverOnce: deliverOnce, collapseID: collapseID)
        let object = try JSONSerialization.jsonObject(with: Data(built.body)) as? [String: Any]
        return try #require(object?["message"] as? [String: Any])
    }

    @Test("the payload's members go as written, with the target beside them")
    func payloadAndTarget() throws {
        let sent = try message(#"{"notification":{"title":"Hi","body":"there"},"data":{"k":"v"},"apns":{"headers":{"apns-priority":"5"}}}"#)
        #expect(sent["token"] as? String == "fcm-token:APA91b")
        #expect((sent["notification"] as? [String: String]) == ["title": "Hi", "body": "there"])
        #expect((sent["data"] as? [String: String]) == ["k": "v"])
        #expect(((sent["apns"] as? [String: Any])?["headers"] as? [String: String]) == ["apns-priority": "5"])
        #expect(sent["android"] == nil)
        let topic = try message(#"{"data":{"k":"v"}}"#, target: .topic("news.sports"))
        #expect(topic["topic"] as? String == "news.sports")
        #expect(topic["token"] == nil)
    }

    @Test("priority, time to live and collapse id become android fields; what the payload sets wins")
    func derivedAndroidFields() throws {
        let derived = try message(#"{"data":{"k":"v"}}"#, priority: 10, timeToLive: 90, collapseID: "score")
        #expect((derived["android"] as? [String: String]) == ["priority": "HIGH", "ttl": "90s", "collapse_key": "score"])
        #expect(((try message("{}", priority: 5))["android"] as? [String: String])?["priority"] == "NORMAL")
        #expect(((try message("{}", priority: 1))["android"] as? [String: String])?["priority"] == "NORMAL")
        #expect(((try message("{}", timeToLive: 90, deliverOnce: true))["android"] as? [String: String])?["ttl"] == "0s")
        #expect(((try message("{}", timeToLive: 99_999_999))["android"] as? [String: String])?["ttl"] == "2419200s")
        #expect(((try message("{}", timeToLive: -3))["android"] as? [String: String])?["ttl"] == "0s")
        let own = try message(#"{"android":{"priority":"NORMAL","ttl":"5s","notification":{"channel_id":"c"}}}"#,
                              priority: 10, timeToLive: 90, collapseID: "score")
        let android = try #require(own["android"] as? [String: Any])
        #expect(android["priority"] as? String == "NORMAL")
        #expect(android["ttl"] as? String == "5s")
        #expect(android["collapse_key"] as? String == "score")
        #expect((android["notification"] as? [String: String]) == ["channel_id": "c"])
    }

    @Test("rows that cannot be an FCM message are refused with the reason, before any request")
    func refusedRows() {
        func refusal(_ payload: String, target: FCMMessage.Target = .token("t")) -> FCMMessageError? {
            do {
                _ = try FCMMessage(target: target, payload: Array(payload.utf8), priority: nil, timeToLive: nil,
                                   deliverOnce: false, collapseID: nil)
                return nil
            } catch {
                return error
            }
        }
        #expect(refusal("[1]") == .payloadNotAnObject)
        #expect(refusal("{") == .payloadNotAnObject)
        #expect(refusal(#"{"token":"other"}"#) == .unknownPayloadMember("token"))
        #expect(refusal(#"{"condition":"'a' in topics"}"#) == .unknownPayloadMember("condition"))
        #expect(refusal(#"{"data":{"n":42}}"#) == .dataNotStrings(key: "n"))
        #expect(refusal(#"{"data":[]}"#) == .dataNotStrings(key: nil))
        #expect(refusal(#"{"android":"high"}"#) == .androidNotAnObject)
        #expect(refusal("{}", target: .token("has space")) == .invalidToken)
        #expect(refusal("{}", target: .token("")) == .invalidToken)
        #expect(refusal("{}", target: .topic("/topics/news")) == .invalidTopic)
        #expect(refusal("{}", target: .topic(String(repeating: "a", count: 901))) == .invalidTopic)
        let big = #"{"data":{"k":""# + String(repeating: "x", count: 2100) + #""}}"#
        #expect(refusal(big) == nil)
        #expect(refusal(big, target: .topic("news")) == .payloadTooLarge(size: 2117, limit: 2048))
        let huge = #"{"data":{"k":""# + String(repeating: "x", count: 4090) + #""}}"#
        #expect(refusal(huge)?.reason == "PayloadTooLarge")
    }

    @Test("validate_only asks FCM to check without delivering; the path names the project")
    func validateOnlyAndPath() throws {
        let built = try FCMMessage(target: .token("t"), payload: Array("{}".utf8), priority: nil, timeToLive: nil,
                                   deliverOnce: false, collapseID: nil, validateOnly: true)
        #expect(String(decoding: built.body, as: UTF8.self) == #"{"message":{"token":"t"},"validate_only":true}"#)
        #expect(FCMMessage.path(project: "example-project") == "/v1/projects/example-project/messages:send")
    }
}
