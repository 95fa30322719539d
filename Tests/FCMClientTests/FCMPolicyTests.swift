@testable import FCMClient
import Foundation
import PGPushCore
import Testing

@Suite("FCM answers: every row of the answer table")
struct FCMPolicyTests {
    func delivery(_ status: Int, _ code: String?, status name: String? = nil, message: String? = nil, fields: [String] = [],
                  retryAfter: String? = nil) -> Delivery {
        let body = FCMErrorBody(status: name ?? FCMPolicy.statusName(status), errorCode: code, message: message,
                                fieldViolations: fields)
        return FCMPolicy.delivery(status: status, retryAfter: retryAfter, body: body.encoded(httpStatus: status), project: "p")
    }

    @Test("200: delivered with the message's name")
    func delivered() {
        let body = Array(#"{"name":"projects/p/messages/0:1780000000001%abc"}"#.utf8)
        let answer = FCMPolicy.delivery(status: 200, retryAfter: nil, body: body, project: "p")
        #expect(answer.verdict == .delivered && answer.messageID == "projects/p/messages/0:1780000000001%abc")
        #expect(answer.provesCredentials && answer.hintsWrongSetup == false)
        #expect(FCMPolicy.delivery(status: 200, retryAfter: nil, body: Array("oops".utf8), project: "p").messageID == nil)
    }

    @Test("UNREGISTERED, SENDER_ID_MISMATCH and an INVALID_ARGUMENT about the token: failed, token listed")
    func deadTokens() {
        for answer in [delivery(404, "UNREGISTERED"), delivery(403, "SENDER_ID_MISMATCH"),
                       delivery(400, "INVALID_ARGUMENT", fields: ["message.token"]),
                       delivery(400, "INVALID_ARGUMENT", message: "The registration token is not a valid FCM registration token")] {
            #expect(answer.verdict == .failed(listsTarget: true), "\(answer)")
        }
        #expect(delivery(404, "UNREGISTERED").reason == "UNREGISTERED")
        // Another project's key: listed, and a hint at the setup when it is most answers.
        #expect(delivery(403, "SENDER_ID_MISMATCH").hintsWrongSetup == true)
        #expect(delivery(404, "UNREGISTERED").hintsWrongSetup == false)
    }

    @Test("another INVALID_ARGUMENT or 4xx: failed, FCM's message kept")
    func rejectedRows() {
        let message = "Invalid value at 'message.data[0].value' (TYPE_STRING), 42"
        let answer = delivery(400, "INVALID_ARGUMENT", message: message, fields: ["message.data[0].value"])
        #expect(answer.verdict == .failed(listsTarget: false) && answer.reason == "INVALID_ARGUMENT" && answer.detail == message)
        let bare = FCMPolicy.delivery(status: 413, retryAfter: nil, body: [], project: "p")
        #expect(bare.verdict == .failed(listsTarget: false) && bare.reason == "HTTP 413" && bare.detail == nil)
    }

    @Test("401 without an FcmError is the access token; THIRD_PARTY_AUTH_ERROR fails the row and flags health")
    func unauthenticated() {
        let refusal = FCMErrorBody(status: "UNAUTHENTICATED", errorCode: nil, message: "Request had invalid authentication credentials.",
                                   fieldViolations: []).encoded(httpStatus: 401)
        #expect(FCMPolicy.refusesAccessToken(status: 401, body: refusal))
        #expect(FCMPolicy.refusesAccessToken(status: 401, body: Array("<html>401</html>".utf8)))
        #expect(!FCMPolicy.refusesAccessToken(status: 403, body: refusal))
        let thirdParty = delivery(401, "THIRD_PARTY_AUTH_ERROR")
        #expect(!FCMPolicy.refusesAccessToken(status: 401, body: FCMErrorBody(status: "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR",
                                                                             message: nil, fieldViolations: []).encoded(httpStatus: 401)))
        #expect(thirdParty.verdict == .failed(listsTarget: false) && thirdParty.reason == "THIRD_PARTY_AUTH_ERROR")
        #expect(thirdParty.healthFlag?.contains("Android ones go on") == true)
        #expect(delivery(401, "APNS_AUTH_ERROR").healthFlag != nil)
        // A token refused again after its renewal: the sender pauses with this verdict.
        guard case .paused(.service, let reason) = FCMPolicy.delivery(status: 401, retryAfter: nil, body: refusal, project: "p").verdict else {
            Issue.record("a 401 the renewal did not mend pauses the app's FCM sending")
            return
        }
        #expect(reason.hasPrefix("UNAUTHENTICATED"))
    }

    @Test("403 PERMISSION_DENIED: the app's FCM sending paused, saying what to check")
    func permissionDenied() {
        let answer = delivery(403, nil, message: "Firebase Cloud Messaging API has not been used in project p")
        guard case .paused(.service, let reason) = answer.verdict else {
            Issue.record("expected a pause, got \(answer.verdict)")
            return
        }
        #expect(reason.hasPrefix("PERMISSION_DENIED") && reason.contains("has not been used in project p")
                && reason.contains("API is enabled"))
        #expect(!answer.provesCredentials)
    }

    @Test("429: throttled, after Retry-After when given (seconds or a date), else from 60 s")
    func quota() {
        #expect(delivery(429, "QUOTA_EXCEEDED", retryAfter: "30").verdict == .throttled(retryAfter: .seconds(30), from: .seconds(60)))
        #expect(delivery(429, nil).verdict == .throttled(retryAfter: nil, from: .seconds(60)))
        #expect(delivery(429, nil).reason == "RESOURCE_EXHAUSTED")
        #expect(delivery(429, "QUOTA_EXCEEDED", retryAfter: "soon").verdict == .throttled(retryAfter: nil, from: .seconds(60)))
    }

    @Test("500, 503, other 5xx and odd statuses: server trouble, never sooner than Retry-After")
    func serverTrouble() {
        #expect(delivery(503, "UNAVAILABLE", retryAfter: "7").verdict == .serverTrouble(notBefore: .seconds(7)))
        #expect(delivery(500, "INTERNAL").verdict == .serverTrouble(notBefore: nil))
        let html = FCMPolicy.delivery(status: 502, retryAfter: nil, body: Array("<html>".utf8), project: "p")
        #expect(html.verdict == .serverTrouble(notBefore: nil) && html.reason == "HTTP 502" && !html.provesCredentials)
        #expect(delivery(503, "UNSPECIFIED_ERROR").reason == "UNAVAILABLE")
    }
}
