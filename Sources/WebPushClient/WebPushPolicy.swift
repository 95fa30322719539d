import Foundation
import PGPushCore

/// What every push service's answer to a Web Push request means, in one place: the Web Push
/// half of the README's answer table. Decided from the status, `Location`, `apns-id`,
/// `Retry-After` and the error body alone; when a retried row is due again is the shared
/// `RetryRules`'.
///
/// | answer | verdict | `last_reason` |
/// |---|---|---|
/// | 2xx (201; Mozilla sometimes 200, others 202) | delivered, `message_id` = `Location`, else Apple's `apns-id` | |
/// | 404, 410 | failed, the endpoint listed in `invalid_tokens` | `SubscriptionGone` |
/// | 400 | failed | `BadRequest` |
/// | 413 | failed | `PayloadTooLarge` |
/// | other 4xx | failed | `Refused` |
/// | 403, or an answer that the subscription was made with another VAPID key (Apple's `VapidPkHashMismatch`, Mozilla's 401 errno 109) | failed, nothing listed; when most of an app's answers from an origin are, that origin's `app_health` says the key is likely wrong | `VapidKeyMismatch` |
/// | other 401 (the VAPID token refused: malformed, expired, a clock off) | the origin paused for the app, rows back in the queue | `VapidTokenRefused` |
/// | 429 | throttled, after `Retry-After` when given | `TooManyRequests` |
/// | 5xx | server trouble, never sooner than `Retry-After` | `ServerError` |
///
/// The reasons are pgpush's own, the same for every push service: each service words its
/// refusals differently (Apple a `reason`, Mozilla an `errno`, FCM plain text). What the
/// service said goes to `delivery_errors.detail`.
///
/// Why a key mismatch fails the row instead of pausing: push services refuse a subscription
/// made with another application server key one subscription at a time (a web app that
/// changed its VAPID key keeps old subscribers), and pausing the origin for one of them would
/// hold back every other subscriber there.
package enum WebPushPolicy {
    package static let keyMismatch = "VapidKeyMismatch"
    /// The reason of a subscription the push service says is gone; the claim fails later rows
    /// to its endpoint by it (sql/017_web_push.sql).
    package static let gone = "SubscriptionGone"
    /// Every `last_reason` a Web Push row can get from pgpush's side: the answers' (above), the
    /// refusals before a request (`WebPushRowError`) and a key that cannot sign.
    package static let reasons: Set<String> = [
        gone, "BadRequest", "PayloadTooLarge", "Refused", keyMismatch, "VapidTokenRefused", "TooManyRequests", "ServerError",
        EndpointRefusal.reason, "InvalidSubscription", "InvalidTopic", "InvalidPayload", "VapidSigningFailed",
    ]

    /// Mozilla's errno for a VAPID key other than the subscription's.
    static let mozillaKeyMismatch = 109

    /// The delivery an answer from `origin` makes.
    package static func delivery(status: Int, location: String?, apnsID: String?, retryAfter: String?,
                                 body: some Collection<UInt8>, origin: PushServiceOrigin, now: Date = Date()) -> Delivery {
        if (200..<300).contains(status) {
            let id = [location, apnsID].compactMap { $0 }.first { !$0.isEmpty && $0.utf8.count <= 1024 }
            return Delivery(verdict: .delivered, status: status, messageID: id, provesCredentials: true, hintsWrongSetup: false)
        }
        let error = WebPushErrorBody(body)
        let wait = retryAfter.flatMap { RetryAfter.duration($0, now: now) }
        var delivery = Delivery(verdict: .failed(listsTarget: false), status: status, reason: reason(status: status),
                                detail: [error.reason, error.message].compactMap { $0 }.joined(separator: ": ").nilIfEmpty,
                                provesCredentials: status < 500 && status != 401 && status != 403, hintsWrongSetup: false)
        if status == 403 || error.reason == "VapidPkHashMismatch" || (status == 401 && error.errno == mozillaKeyMismatch) {
            delivery.reason = keyMismatch
            delivery.hintsWrongSetup = true
            delivery.provesCredentials = false
            return delivery
        }
        switch status {
        case 404, 410:
            delivery.verdict = .failed(listsTarget: true)
        case 401:
            delivery.verdict = .paused(.requestScope, reason: "\(origin) refused the VAPID token"
                + (error.reason.map { " (\($0))" } ?? "")
                + "; check vapid_subject, the key file and this machine's clock")
        default:
            delivery.verdict = .answered(status: status, retryAfter: wait)
        }
        return delivery
    }

    /// `last_reason` for an answer that did not deliver (the table above).
    static func reason(status: Int) -> String {
        switch status {
        case 404, 410: gone
        case 400: "BadRequest"
        case 401: "VapidTokenRefused"
        case 403: keyMismatch
        case 413: "PayloadTooLarge"
        case 429: "TooManyRequests"
        case 500...: "ServerError"
        default: "Refused"
        }
    }
}

/// What a push service says about a refusal, where it says it: Apple `{"reason": "…"}`,
/// Mozilla `{"errno": …, "message": "…"}`; anything else (FCM's plain text, a proxy's HTML)
/// gives neither. Reasons are kept only when short and plain.
struct WebPushErrorBody {
    var reason: String?
    var errno: Int?
    var message: String?

    init(_ body: some Collection<UInt8>) {
        guard body.count <= 16_384, case .object(let members)? = JSONValue.parse(body) else { return }
        if let text = members["reason"]?.stringValue, (1...64).contains(text.utf8.count),
           text.utf8.allSatisfy({ ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) }) {
            reason = text
        }
        errno = members["errno"]?.integerValue.flatMap { Int(exactly: $0) }
        if let errno, reason == nil { reason = "errno \(errno)" }
        message = members["message"]?.stringValue.map { String($0.prefix(512)) }
    }
}

extension String {
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}
