import FCMClient
import Foundation
import Testing

@Suite("FCM access tokens: what the token endpoint's answer means")
struct TokenExchangeAnswerTests {
    let now = Date(timeIntervalSince1970: 1_780_000_000)

    func decide(_ status: Int, _ body: String) -> TokenExchangeAnswer {
        TokenExchangeAnswer.decide(status: status, body: Array(body.utf8), receivedAt: now)
    }

    @Test("a 200 gives the token, expiring after expires_in (a number or a numeric string), renewed five minutes early")
    func issued() {
        let answer = decide(200, #"{"access_token":"ya29.c.abc-DEF_123","expires_in":3599,"token_type":"Bearer"}"#)
        guard case .issued(let token) = answer else {
            Issue.record("not issued: \(answer)")
            return
        }
        #expect(token.value == "ya29.c.abc-DEF_123")
        #expect(token.expiresAt == now + 3599)
        #expect(!token.needsRenewal(at: now + 3299 - 1))
        #expect(token.needsRenewal(at: now + 3299))
        #expect(!token.description.contains("ya29"))
        #expect(decide(200, #"{"access_token":"t","expires_in":"3600"}"#) == .issued(AccessToken(value: "t", lifetime: 3600, receivedAt: now)))
        // No lifetime named: Google's hour.
        #expect(decide(200, #"{"access_token":"t"}"#) == .issued(AccessToken(value: "t", lifetime: 3600, receivedAt: now)))
    }

    @Test("a short-lived token is renewed halfway, never at once")
    func shortLifetime() {
        let token = AccessToken(value: "t", lifetime: 120, receivedAt: now)
        #expect(!token.needsRenewal(at: now + 59))
        #expect(token.needsRenewal(at: now + 60))
    }

    @Test("a 200 whose token could forge a header or whose lifetime is nonsense is not used")
    func unusableTokens() {
        for body in [#"{"access_token":"ya29 abc"}"#, #"{"access_token":"ya29\r\nX-Evil: 1"}"#, #"{"access_token":""}"#,
                     #"{"expires_in":3600}"#, "not json", #"{"access_token":"t","expires_in":-5}"#,
                     #"{"access_token":"t","expires_in":"soon"}"#, #"{"access_token":""# + String(repeating: "a", count: 5000) + #""}"#] {
            guard case .retry = decide(200, body) else {
                Issue.record("used: \(body)")
                continue
            }
        }
    }

    @Test("invalid_grant and other refusals pause with what to check; busy or failing endpoints are retried")
    func refusalsAndRetries() {
        let refused = decide(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
        guard case .refused(let reason) = refused else {
            Issue.record("not refused: \(refused)")
            return
        }
        #expect(reason.contains("invalid_grant: Invalid JWT Signature."))
        #expect(reason.contains("clock"))
        for status in [401, 403] {
            guard case .refused = decide(status, #"{"error":"unauthorized_client"}"#) else {
                Issue.record("\(status) not refused")
                continue
            }
        }
        for (status, body) in [(500, ""), (503, "<html>"), (429, #"{"error":"rate_limit_exceeded"}"#), (408, ""),
                               (400, #"{"error":"temporarily_unavailable"}"#)] {
            guard case .retry = decide(status, body) else {
                Issue.record("\(status) \(body) not retried")
                continue
            }
        }
    }

    @Test("the endpoint's words reach a reason clipped and without hidden characters")
    func hostileDescription() {
        let answer = decide(400, #"{"error":"invalid_grant","error_description":"line\nforged=1\u001b[31m"# + String(repeating: "x", count: 500) + #""}"#)
        guard case .refused(let reason) = answer else {
            Issue.record("not refused: \(answer)")
            return
        }
        #expect(!reason.unicodeScalars.contains { $0.value < 0x20 })
        #expect(reason.count < 600)
    }
}
