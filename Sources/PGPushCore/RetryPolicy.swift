/// What to do with a notification after an APNs answer (SPEC §3, §4), as a pure
/// function: the same inputs and the same random numbers give the same decision,
/// so tests pin it down with a seeded generator.
public enum RetryDecision: Equatable, Sendable {
    /// Mark `delivered`.
    case delivered
    /// Park the row (`send_after = now + delay`) and send again. `countsAsAttempt`
    /// says whether this send is counted in `attempts`.
    case retry(after: Duration, countsAsAttempt: Bool)
    /// Send again at once on a fresh (or another) connection, not counted as an
    /// attempt; `signNewProviderToken` asks for a new JWT first (ExpiredProviderToken).
    /// A TooManyProviderTokenUpdates or unprocessed-stream resend reuses the current
    /// JWT: for the former, signing more often is exactly what caused it.
    case resendOnFreshConnection(signNewProviderToken: Bool)
    /// Leave the row queued and mark the app unhealthy; its credentials are retried
    /// with backoff at app level, and the row is not burned as `failed`.
    case holdForApp
    /// Mark `failed`; `invalidatesToken` also records the token in `invalid_tokens`.
    case fail(invalidatesToken: Bool)
}

public enum RetryPolicy {
    /// - Parameters:
    ///   - outcome: the class of the answer just received.
    ///   - attempts: counted attempts so far, including the one just answered (at least 1).
    ///   - freshConnectionResends: uncounted fresh-connection resends this notification already had.
    ///   - random: the source of jitter.
    public static func decide(
        _ outcome: OutcomeClass,
        attempts: Int,
        freshConnectionResends: Int = 0,
        configuration: RetryConfiguration = .default,
        using random: inout some RandomNumberGenerator
    ) -> RetryDecision {
        let attempts = max(attempts, 1)
        switch outcome {
        case .delivered:
            return .delivered
        case .retryServerError:
            guard attempts <= configuration.serverErrorRetries else { return .fail(invalidatesToken: false) }
            return .retry(after: randomDuration(in: configuration.serverErrorDelay, using: &random), countsAsAttempt: true)
        case .backOffTooManyRequests:
            guard attempts < configuration.tooManyRequestsMaximumAttempts else { return .fail(invalidatesToken: false) }
            return .retry(after: backoff(attempt: attempts, configuration: configuration, using: &random), countsAsAttempt: true)
        case .notProcessed:
            // A server that refuses every stream must not keep a row in flight
            // forever: past the cap, the resend counts like a lost response.
            guard freshConnectionResends < configuration.notProcessedRequeues else {
                return decide(.retryServerError, attempts: attempts, configuration: configuration, using: &random)
            }
            return .resendOnFreshConnection(signNewProviderToken: false)
        case .refreshProviderToken, .signingBug:
            guard freshConnectionResends < configuration.freshConnectionResends else { return .holdForApp }
            return .resendOnFreshConnection(signNewProviderToken: outcome == .refreshProviderToken)
        case .tokenInvalid:
            return .fail(invalidatesToken: true)
        case .appMisconfigured:
            return .holdForApp
        case .permanentFailure:
            return .fail(invalidatesToken: false)
        }
    }

    /// Exponential step `base · 2^(attempt-1)`, capped, with equal jitter: half the
    /// step fixed, half uniformly random.
    static func backoff(attempt: Int, configuration: RetryConfiguration, using random: inout some RandomNumberGenerator) -> Duration {
        let base = max(nanoseconds(configuration.tooManyRequestsBaseDelay), 0)
        let cap = max(nanoseconds(configuration.tooManyRequestsMaximumDelay), 0)
        let doublings = attempt - 1
        var step = cap
        if doublings < 62 {
            let (scaled, overflow) = base.multipliedReportingOverflow(by: Int64(1) << doublings)
            if !overflow { step = min(scaled, cap) }
        }
        let half = step / 2
        return .nanoseconds(half + Int64.random(in: 0...(step - half), using: &random))
    }

    static func randomDuration(in range: ClosedRange<Duration>, using random: inout some RandomNumberGenerator) -> Duration {
        let lower = max(nanoseconds(range.lowerBound), 0)
        let upper = max(nanoseconds(range.upperBound), lower)
        return .nanoseconds(Int64.random(in: lower...upper, using: &random))
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? Int64.min / 2 : Int64.max / 2 }
        return whole + attoseconds / 1_000_000_000
    }
}
