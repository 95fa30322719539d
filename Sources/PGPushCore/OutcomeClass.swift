/// What an APNs answer means for the notification and the app (SPEC §4).
/// The worker's next step (retry, fail, refresh credentials, mark the app
/// unhealthy) follows from the class, not from individual reasons.
public enum OutcomeClass: String, CaseIterable, Sendable {
    /// 2xx: APNs accepted the notification.
    case delivered
    /// 5xx or no response (connection lost, timeout): retry a few times, soon.
    case retryServerError
    /// The request provably never reached APNs processing: its stream was above a
    /// GOAWAY's `last_stream_id` or refused with REFUSED_STREAM (RFC 9113 §6.8,
    /// §8.7; apns-reference §7). Resend on another connection, not counted as an
    /// attempt. Never derived from a status; the HTTP/2 layer reports it directly.
    case notProcessed
    /// 429 TooManyRequests: this device token is pushed to too often; back off exponentially.
    case backOffTooManyRequests
    /// 403 ExpiredProviderToken: sign a fresh JWT, use a fresh connection, resend.
    case refreshProviderToken
    /// 429 TooManyProviderTokenUpdates: pgpush re-signed too often; load is not the
    /// cause, so backing off would not help. Resend on a fresh connection.
    case signingBug
    /// The token is dead or belongs elsewhere: fail and record it in `invalid_tokens`.
    case tokenInvalid
    /// Credentials, certificate, environment or topic are wrong for the whole app:
    /// mark the app unhealthy and keep its rows queued instead of burning them.
    case appMisconfigured
    /// This notification can never succeed as it is: fail with the reason.
    case permanentFailure
}
