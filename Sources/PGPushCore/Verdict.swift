import Foundation

/// What one attempt at a row means, in the words every service shares. A service's policy
/// (APNs's `DeliveryPolicy`, FCM's `FCMPolicy`) turns its transport's answer into a
/// `Delivery` carrying one of these; `RetryRules` and the worker's `OutcomeDecider` turn it
/// into the outcome the queue writes. Nothing between them looks at the answer again.
package enum Verdict: Equatable, Sendable {
    /// The service accepted the message.
    case delivered
    /// The request certainly never reached the service (never written, refused stream,
    /// above a GOAWAY's last stream, no connection): send again, not counted, a bounded
    /// number of times.
    case notProcessed
    /// 5xx, or no answer to a request the service may have processed: the 5xx rule, never
    /// sooner than `notBefore` (the answer's `Retry-After`).
    case serverTrouble(notBefore: Duration?)
    /// Too many requests: back off exponentially from the app's 429 base, or from `from`
    /// when the service asks for a longer start (FCM: 60 s); after `retryAfter` when given.
    case throttled(retryAfter: Duration?, from: Duration?)
    /// The row can never succeed as it is. `listsTarget`: its token is gone (listed in
    /// `invalid_tokens`) or, for a broadcast, its channel is marked in `channels`.
    case failed(listsTarget: Bool)
    /// The fault is not the row's: it goes back to the queue uncounted and `scope` pauses
    /// with back-off. `reason` is what `app_health` shows: what to check.
    case paused(PauseScope, reason: String)

    /// The HTTP rule every service shares for an answer its policy has no rule of its own for:
    /// 429 throttled (from `throttledFrom` when the service asks for a longer start), a 4xx
    /// fails the row, anything else (5xx, statuses no service uses) is server trouble; both
    /// waits never shorter than `retryAfter`.
    package static func answered(status: Int, retryAfter: Duration?, throttledFrom: Duration? = nil) -> Verdict {
        switch status {
        case 429: .throttled(retryAfter: retryAfter, from: throttledFrom)
        case 400..<500: .failed(listsTarget: false)
        default: .serverTrouble(notBefore: retryAfter)
        }
    }

    /// The verdict on a request that got no answer, for every service: a request the HTTP/2
    /// layer would not encode fails; a proxy that refuses the tunnel pauses the app's sending
    /// to the service (the rows wait, uncounted, until the proxy lets them through); any other
    /// is sent again, uncounted when it certainly never reached the service, else under the
    /// 5xx rule. A service's policy first takes what it reads into a failure of its own (APNs:
    /// a GOAWAY's reason, a provider token that cannot be signed).
    package static func noAnswer(_ failure: DeliveryFailure) -> Verdict {
        if failure.cause == .invalidRequest { return .failed(listsTarget: false) }
        if failure.cause == .proxyRefused { return .paused(.service, reason: "ProxyRefused: \(failure.detail)") }
        return failure.processing == .notProcessed ? .notProcessed : .serverTrouble(notBefore: nil)
    }
}

/// What a pause holds back.
package enum PauseScope: Equatable, Sendable {
    /// Every row of the app for this service (credentials, environment, quota).
    case service
    /// Rows of the request's own scope (`NotificationSender.scope(of:)`): an APNs topic.
    case requestScope
}

/// What one attempt at a row came to, as a service reports it to the worker: the verdict
/// and the facts the queue records beside it. Every send returns one; none throws.
package struct Delivery: Equatable, Sendable {
    package var verdict: Verdict
    /// The HTTP status; nil when no answer arrived (or none was asked for).
    package var status: Int?
    /// What `last_reason` shows: the service's reason, or why no answer came
    /// ("DeadlineExceeded", "ConnectionLost", …); nil when delivered, and for an answer
    /// without a reason (the row then shows `HTTP<status>`).
    package var reason: String?
    /// The service's own words about a refusal, kept in `delivery_errors` (FCM's error message).
    package var detail: String?
    /// The service's id of an accepted message (`message_id`): FCM's `name`.
    package var messageID: String?
    /// APNs's `apns-unique-id` (development environment), for Apple's delivery log.
    package var apnsUniqueID: UUID?
    /// When the service last saw the token invalid (APNs's `timestamp` on a 410).
    package var targetInvalidSince: Date?
    /// The answer came from the service past its credential checks: it proves the app's
    /// credentials (and, unless it refused it, the request's scope) work.
    package var provesCredentials: Bool
    /// The answer is the kind that, when it is most of an app's recent answers, points at a
    /// wrong setup rather than bad rows (APNs's BadDeviceToken: the other environment).
    /// nil when it is no answer from the service at all.
    package var hintsWrongSetup: Bool?
    /// A reason `app_health` shows for the app's service while its rows go on (FCM: the APNs
    /// credentials uploaded to Firebase are refused, so iOS targets fail but Android ones not).
    package var healthFlag: String?
    /// Why no answer came, when none did.
    package var failure: DeliveryFailure?
    /// Resends made inside the sender, not counted as attempts.
    package var resends: Int
    /// From the send being asked for to this result, waits for a connection and the rate included.
    package var latency: Duration

    package init(verdict: Verdict, status: Int? = nil, reason: String? = nil, detail: String? = nil, messageID: String? = nil,
                 apnsUniqueID: UUID? = nil, targetInvalidSince: Date? = nil, provesCredentials: Bool = false,
                 hintsWrongSetup: Bool? = nil, failure: DeliveryFailure? = nil, resends: Int = 0, latency: Duration = .zero) {
        self.verdict = verdict
        self.status = status
        self.reason = reason
        self.detail = detail
        self.messageID = messageID
        self.apnsUniqueID = apnsUniqueID
        self.targetInvalidSince = targetInvalidSince
        self.provesCredentials = provesCredentials
        self.hintsWrongSetup = hintsWrongSetup
        self.failure = failure
        self.resends = resends
        self.latency = latency
    }

    /// A row refused before any request: `reason` is pgpush's own (`BadDeviceToken`, …),
    /// `detail` the sentence that says why.
    package static func refused(reason: String, detail: String) -> Delivery {
        Delivery(verdict: .failed(listsTarget: false), reason: reason, detail: detail)
    }
}
