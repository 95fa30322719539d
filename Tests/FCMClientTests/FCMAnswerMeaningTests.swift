@testable import FCMClient
import Foundation
import Testing

@Suite("FCM answers: every row of the answer table")
struct FCMAnswerMeaningTests {
    func meaning(_ status: Int, _ code: String?, status name: String? = nil, message: String? = nil, fields: [String] = [],
                 retryAfter: String? = nil) -> FCMAnswerMeaning {
        let body = FCMErrorBody(status: name ?? FCMAnswerMeaning.statusName(status), errorCode: code, message: message,
                                fieldViolations: fields)
        return FCMAnswerMeaning.of(status: status, retryAfter: retryAfter, body: body.encoded(httpStatus: status))
    }

    @Test("200: delivered with the message's name")
    func delivered() {
        let body = Array(#"{"name":"projects/p/messages/0:1780000000001%abc"}"#.utf8)
        #expect(FCMAnswerMeaning.of(status: 200, retryAfter: nil, body: body) == .delivered(messageID: "projects/p/messages/0:1780000000001%abc"))
        #expect(FCMAnswerMeaning.of(status: 200, retryAfter: nil, body: Array("oops".utf8)) == .delivered(messageID: nil))
    }

    @Test("UNREGISTERED, SENDER_ID_MISMATCH and an INVALID_ARGUMENT about the token: a dead token")
    func deadTokens() {
        #expect(meaning(404, "UNREGISTERED") == .deadToken(reason: "UNREGISTERED"))
        #expect(meaning(403, "SENDER_ID_MISMATCH") == .deadToken(reason: "SENDER_ID_MISMATCH"))
        #expect(meaning(400, "INVALID_ARGUMENT", fields: ["message.token"]) == .deadToken(reason: "INVALID_ARGUMENT"))
        #expect(meaning(400, "INVALID_ARGUMENT", message: "The registration token is not a valid FCM registration token")
                    == .deadToken(reason: "INVALID_ARGUMENT"))
    }

    @Test("another INVALID_ARGUMENT or 4xx: the row is rejected and FCM's message kept")
    func rejectedRows() {
        let message = "Invalid value at 'message.data[0].value' (TYPE_STRING), 42"
        #expect(meaning(400, "INVALID_ARGUMENT", message: message, fields: ["message.data[0].value"])
                    == .rowRejected(reason: "INVALID_ARGUMENT", detail: message))
        #expect(FCMAnswerMeaning.of(status: 413, retryAfter: nil, body: []) == .rowRejected(reason: "HTTP 413", detail: nil))
    }

    @Test("401 without an FcmError is the access token; THIRD_PARTY_AUTH_ERROR is not")
    func unauthenticated() {
        #expect(meaning(401, nil) == .accessTokenRefused)
        #expect(FCMAnswerMeaning.of(status: 401, retryAfter: nil, body: Array("<html>401</html>".utf8)) == .accessTokenRefused)
        #expect(meaning(401, "THIRD_PARTY_AUTH_ERROR") == .thirdPartyCredentialsRefused)
        #expect(meaning(401, "APNS_AUTH_ERROR") == .thirdPartyCredentialsRefused)
    }

    @Test("403 PERMISSION_DENIED: the app's credentials or project are refused, with FCM's words")
    func permissionDenied() {
        #expect(meaning(403, nil, message: "Firebase Cloud Messaging API has not been used in project p")
                    == .credentialsRefused(reason: "PERMISSION_DENIED", detail: "Firebase Cloud Messaging API has not been used in project p"))
    }

    @Test("429: the quota, after Retry-After when given (seconds or a date)")
    func quota() {
        #expect(meaning(429, "QUOTA_EXCEEDED", retryAfter: "30") == .quotaExceeded(reason: "QUOTA_EXCEEDED", retryAfter: .seconds(30)))
        #expect(meaning(429, nil) == .quotaExceeded(reason: "RESOURCE_EXHAUSTED", retryAfter: nil))
        #expect(meaning(429, "QUOTA_EXCEEDED", retryAfter: "soon") == .quotaExceeded(reason: "QUOTA_EXCEEDED", retryAfter: nil))
        // 1,780,000,000 s is 2026-05-28 20:26:40 UTC.
        let now = Date(timeIntervalSince1970: 1_780_000_000)
        #expect(FCMAnswerMeaning.retryAfter("Thu, 28 May 2026 20:27:00 GMT", now: now) == .seconds(20))
        #expect(FCMAnswerMeaning.retryAfter("Thu, 28 May 2026 20:00:00 GMT", now: now) == .zero)
        #expect(FCMAnswerMeaning.retryAfter("999999", now: now) == .seconds(3600))
        // RFC 9110's example, a leap day and the end of a year.
        #expect(FCMAnswerMeaning.httpDate("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(FCMAnswerMeaning.httpDate("Thu, 29 Feb 2024 00:00:00 GMT") == Date(timeIntervalSince1970: 1_709_164_800))
        #expect(FCMAnswerMeaning.httpDate("Fri, 31 Dec 2027 23:59:59 GMT") == Date(timeIntervalSince1970: 1_830_297_599))
        for bad in ["Sun, 06 Nov 1994 08:49:37 UTC", "06 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
                    "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 6 Nov 1994 08:49 GMT", ""] {
            #expect(FCMAnswerMeaning.httpDate(bad) == nil, "\(bad)")
        }
    }

    @Test("500, 503, other 5xx and odd statuses: server trouble, never sooner than Retry-After")
    func serverTrouble() {
        #expect(meaning(503, "UNAVAILABLE", retryAfter: "7") == .serverTrouble(reason: "UNAVAILABLE", retryAfter: .seconds(7)))
        #expect(meaning(500, "INTERNAL") == .serverTrouble(reason: "INTERNAL", retryAfter: nil))
        #expect(FCMAnswerMeaning.of(status: 502, retryAfter: nil, body: Array("<html>".utf8)) == .serverTrouble(reason: "HTTP 502", retryAfter: nil))
        #expect(meaning(503, "UNSPECIFIED_ERROR") == .serverTrouble(reason: "UNAVAILABLE", retryAfter: nil))
    }
}
