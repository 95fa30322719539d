/// When a row that was not delivered is tried again, for every service: the 5xx rule, the
/// 429 back-off, the bounded requeue of requests never processed. The numbers are the app's
/// `RetryConfiguration`; what an answer means is the service's policy, not this file's.
///
/// | verdict | the row |
/// |---|---|
/// | serverTrouble | retry after 1–5 s (never sooner than the answer's `Retry-After`), 3 times, then `failed` |
/// | notProcessed | requeue uncounted after 50–500 ms, 5 times, then as serverTrouble |
/// | throttled | after `Retry-After` when given, else exponential back-off from the app's base (1 s, equal jitter) or the service's floor (FCM: 60 s, jitter above it); 8 attempts |
package enum RetryRules {
    /// What becomes of a row the verdict gives another chance.
    package enum Next: Equatable, Sendable {
        /// Back to the queue, due after the delay; `counted` keeps the claim's attempt.
        case retry(after: Duration, counted: Bool)
        /// Its chances are used up: `failed`.
        case exhausted
    }

    /// An uncounted requeue after an unprocessed request comes back this soon, spread a little.
    package static let requeueDelay: ClosedRange<Duration> = .milliseconds(50) ... .milliseconds(500)
    /// A paused row's next chance; the scope's own back-off decides when it is really sent.
    package static let pausedRowDelay: Duration = .seconds(5)

    /// The row's next chance after a verdict that gives one (serverTrouble, notProcessed,
    /// throttled); nil for any other verdict. Pure: the same inputs and random numbers give
    /// the same answer.
    package static func next(after verdict: Verdict, history: RowHistory, retry configuration: RetryConfiguration = .default,
                             using random: inout some RandomNumberGenerator) -> Next? {
        let attempts = max(history.attempts, 1)
        switch verdict {
        case .serverTrouble(let notBefore):
            guard attempts <= configuration.serverErrorRetries else { return .exhausted }
            let delay = randomDuration(in: configuration.serverErrorDelay, using: &random)
            return .retry(after: max(delay, notBefore ?? .zero), counted: true)
        case .throttled(let retryAfter, let from):
            guard attempts < configuration.tooManyRequestsMaximumAttempts else { return .exhausted }
            if let retryAfter { return .retry(after: retryAfter, counted: true) }
            return .retry(after: backoff(attempt: attempts, configuration: configuration, from: from, using: &random), counted: true)
        case .notProcessed:
            // A server that refuses every stream must not keep a row in flight for ever:
            // past the cap, the requeue counts like a lost answer.
            guard history.uncountedRequeues < configuration.notProcessedRequeues else {
                return next(after: .serverTrouble(notBefore: nil), history: history, retry: configuration, using: &random)
            }
            return .retry(after: randomDuration(in: requeueDelay, using: &random), counted: false)
        case .delivered, .failed, .paused:
            return nil
        }
    }

    /// Exponential step `base · 2^(attempt-1)`, capped. With the app's own base, equal jitter:
    /// half the step fixed, half uniformly random, so a retry never comes at once yet spreads
    /// out. A service's `from` is a floor it asks for (FCM: at least 60 s), so the jitter goes
    /// above the step instead (step to 1.5 × step), and the cap is at least 8 × `from`.
    static func backoff(attempt: Int, configuration: RetryConfiguration, from: Duration? = nil,
                        using random: inout some RandomNumberGenerator) -> Duration {
        let floor = from.map { max(nanoseconds($0), 0) }
        let base = floor ?? max(nanoseconds(configuration.tooManyRequestsBaseDelay), 0)
        let raisedCap = floor.map { $0.multipliedReportingOverflow(by: 8).overflow ? Int64.max / 2 : $0 * 8 } ?? 0
        let cap = max(nanoseconds(configuration.tooManyRequestsMaximumDelay), raisedCap, base, 0)
        let doublings = attempt - 1
        var step = cap
        if doublings < 62 {
            let (scaled, overflow) = base.multipliedReportingOverflow(by: Int64(1) << max(doublings, 0))
            if !overflow { step = min(scaled, cap) }
        }
        if floor != nil {
            return .nanoseconds(step + Int64.random(in: 0...(step / 2), using: &random))
        }
        let half = step / 2
        return .nanoseconds(half + Int64.random(in: 0...(step - half), using: &random))
    }

    package static func randomDuration(in range: ClosedRange<Duration>, using random: inout some RandomNumberGenerator) -> Duration {
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

/// The row's history the decision needs.
package struct RowHistory: Equatable, Sendable {
    /// Counted attempts so far, including the one just answered.
    package var attempts: Int
    /// Times the row already went back to the queue uncounted because it was not processed.
    package var uncountedRequeues: Int

    package init(attempts: Int, uncountedRequeues: Int = 0) {
        self.attempts = attempts
        self.uncountedRequeues = uncountedRequeues
    }
}
