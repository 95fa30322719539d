import Foundation
import PGPushCore
import Testing
@testable import WebPushClient

/// Each row of the Web Push answer table (WebPushPolicy), as the push services answer.
struct WebPushPolicyTests {
    static let origin = PushServiceOrigin(host: "web.push.apple.com")

    static func delivery(_ status: Int, _ body: String = "", location: String? = nil, apnsID: String? = nil,
                         retryAfter: String? = nil) -> Delivery {
        WebPushPolicy.delivery(status: status, location: location, apnsID: apnsID, retryAfter: retryAfter,
                               body: Array(body.utf8), origin: origin, now: Date(timeIntervalSince1970: 1_780_000_000))
    }

    @Test func anyTwoHundredDeliversWithLocationElseApplesID() {
        let location = "https://updates.push.services.mozilla.com/m/gAAAAABm"
        for status in [201, 200, 202] {
            let delivered = Self.delivery(status, location: location)
            #expect(delivered.verdict == .delivered && delivered.messageID == location && delivered.provesCredentials)
        }
        #expect(Self.delivery(201, apnsID: "5E6F2B1A-0000-4000-8000-00000000AAAA").messageID == "5E6F2B1A-0000-4000-8000-00000000AAAA")
        #expect(Self.delivery(201, location: "", apnsID: "x").messageID == "x")
        #expect(Self.delivery(201).messageID == nil)
    }

    @Test func goneSubscriptionsFailAndAreListed() {
        #expect(Self.delivery(410).verdict == .failed(listsTarget: true))
        #expect(Self.delivery(404, #"{"code":404,"errno":102,"error":"Not Found","message":"Request did not validate invalid token"}"#).verdict
                == .failed(listsTarget: true))
        let gone = Self.delivery(410, #"{"reason":"Unregistered"}"#)
        #expect(gone.reason == "SubscriptionGone" && gone.detail == "Unregistered")
        #expect(Self.delivery(404).reason == "SubscriptionGone")
    }

    /// pgpush's own reason, whatever the service called it; the service's words in the detail.
    @Test func badRequestsAndTooLargeFailWithPGPushsReason() {
        let topic = Self.delivery(400, #"{"reason":"BadWebPushTopic"}"#)
        #expect(topic.verdict == .failed(listsTarget: false) && topic.reason == "BadRequest" && topic.provesCredentials)
        #expect(topic.detail == "BadWebPushTopic")
        let large = Self.delivery(413, #"{"code":413,"errno":104,"error":"Payload Too Large","message":"too big"}"#)
        #expect(large.verdict == .failed(listsTarget: false) && large.reason == "PayloadTooLarge" && large.detail == "errno 104: too big")
        let other = Self.delivery(406)
        #expect(other.verdict == .failed(listsTarget: false) && other.reason == "Refused" && other.detail == nil)
        // Markup or a long text is no reason of the service's.
        #expect(Self.delivery(400, #"{"reason":"<script>alert(1)</script>"}"#).detail == nil)
    }

    /// Another VAPID key than the subscription's: the row fails, nothing is listed, and the
    /// answer counts towards "the app's key is likely wrong".
    @Test func aKeyMismatchFailsTheRowOnly() {
        for mismatch in [Self.delivery(403, "the key in the authorization header does not correspond to the sender ID"),
                         Self.delivery(400, #"{"reason":"VapidPkHashMismatch"}"#),
                         Self.delivery(403, #"{"reason":"VapidPkHashMismatch"}"#),
                         Self.delivery(401, #"{"code":401,"errno":109,"error":"Unauthorized","message":"Key mismatch"}"#)] {
            #expect(mismatch.verdict == .failed(listsTarget: false))
            #expect(mismatch.reason == "VapidKeyMismatch" && mismatch.hintsWrongSetup == true && !mismatch.provesCredentials)
        }
        #expect(Self.delivery(400, #"{"reason":"BadWebPushTopic"}"#).hintsWrongSetup == false)
    }

    /// Our token refused: the origin pauses for the app (scope = origin), rows go back.
    @Test func aRefusedTokenPausesTheOrigin() {
        for refused in [Self.delivery(401), Self.delivery(401, #"{"code":401,"errno":109,"error":"Unauthorized"}"#.replacingOccurrences(of: "109", with: "110"))] {
            guard case .paused(.requestScope, let reason) = refused.verdict else {
                Issue.record("not paused: \(refused.verdict)"); continue
            }
            #expect(reason.contains("https://web.push.apple.com") && reason.contains("vapid_subject"))
            #expect(!refused.provesCredentials && refused.reason == "VapidTokenRefused")
        }
    }

    @Test func throttlingAndServerTroubleWaitForRetryAfter() {
        #expect(Self.delivery(429, retryAfter: "30").verdict == .throttled(retryAfter: .seconds(30), from: nil))
        #expect(Self.delivery(429).verdict == .throttled(retryAfter: nil, from: nil))
        #expect(Self.delivery(503, retryAfter: "120").verdict == .serverTrouble(notBefore: .seconds(120)))
        #expect(Self.delivery(500).verdict == .serverTrouble(notBefore: nil))
        #expect(Self.delivery(502, "<html>bad gateway</html>").verdict == .serverTrouble(notBefore: nil))
        #expect(!Self.delivery(503).provesCredentials)
        #expect(Self.delivery(503).reason == "ServerError" && Self.delivery(429).reason == "TooManyRequests")
    }
}
