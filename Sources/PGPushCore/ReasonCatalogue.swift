/// Turns an APNs answer into an `OutcomeClass` (SPEC §4; apns-reference §4:
/// "match on the reason, accept both spellings, handle unknown reasons generically").
///
/// A known reason decides, whatever the status (statuses have drifted, e.g.
/// ExpiredToken 400 → 410). An unknown or missing reason falls back to the status:
/// 2xx delivered, 5xx retry, 429 back off, 403 app misconfigured, 410 token
/// invalid (that is what 410 means at APNs), other 4xx permanent. A status APNs
/// never uses (1xx, 3xx, nonsense) suggests a proxy or a wrong endpoint in the
/// way, and is retried like a lost response so the bounded 5xx policy applies.
public enum ReasonCatalogue {
    /// - Parameters:
    ///   - status: the HTTP status, or nil when no response arrived.
    ///   - reason: the `reason` from the error body, if any.
    ///   - topicWasExplicit: the row named its own topic. Then `BadTopic` and
    ///     `TopicDisallowed` are that row's fault, not the app's, and fail only it.
    public static func classify(status: Int?, reason: String?, topicWasExplicit: Bool = false) -> OutcomeClass {
        guard let status else { return .retryServerError }
        if (200..<300).contains(status) { return .delivered }
        if let reason, let known = APNsReason(rawValue: reason) {
            if topicWasExplicit, known.concernsTopic { return .permanentFailure }
            return known.outcome
        }
        switch status {
        case 429: return .backOffTooManyRequests
        case 403: return .appMisconfigured
        case 410: return .tokenInvalid
        case 400..<500: return .permanentFailure
        default: return .retryServerError
        }
    }
}
