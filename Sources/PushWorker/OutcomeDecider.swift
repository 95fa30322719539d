import APNsClient
import Foundation
import PGPushCore
import PushQueue

/// Turns one send's result into the row's outcome (SPEC §4), using the core's
/// reason catalogue and retry policy. Pure: the same inputs and random numbers
/// give the same outcome.
struct OutcomeDecider {
    /// When an app's credentials or topic are wrong, its rows wait this long
    /// before a worker tries again (the app-level backoff decides when).
    static let holdDelay: Duration = .seconds(5)
    /// An unprocessed request goes back at once, spread a little.
    static let resendDelay: ClosedRange<Double> = 0.05...0.5

    var retry: RetryConfiguration

    struct Decision: Equatable {
        var outcome: Outcome
        /// Set when the answer says the whole app is misconfigured.
        var appProblem: String?
        var delivered: Bool { outcome.disposition == .delivered }
    }

    func decide(_ row: ClaimedNotification, _ result: DeliveryResult, using random: inout some RandomNumberGenerator) -> Decision {
        let outcomeClass = result.outcomeClass(topicWasExplicit: row.notification.topic != nil)
        let status = result.status
        var reason = result.reason
        if let failure = result.failure {
            // "DeadlineExceeded", "ConnectionLost", …: what the last_reason column shows for no answer.
            reason = failure.cause.rawValue.prefix(1).uppercased() + failure.cause.rawValue.dropFirst()
        } else if let status, !(200..<300).contains(status), reason == nil {
            reason = "HTTP\(status)"
        }
        let timestamp = result.timestamp
        // The client's own resends happened within this claim; what bounds a row is how
        // often it already went back to the queue uncounted (claims minus counted attempts).
        let uncountedRequeues = outcomeClass == .notProcessed ? max(row.claimCount - row.attempts, 0) : result.resends
        let decision = RetryPolicy.decide(outcomeClass, attempts: row.attempts,
                                          freshConnectionResends: uncountedRequeues,
                                          configuration: retry, using: &random)
        var outcome = Outcome(id: row.id, claimCount: row.claimCount, disposition: .failed, httpStatus: status, reason: reason)
        var appProblem: String?
        switch decision {
        case .delivered:
            outcome.disposition = .delivered
            outcome.reason = nil
        case .retry(let delay, let counts):
            outcome.disposition = .retry(after: delay, countsAsAttempt: counts)
        case .resendOnFreshConnection:
            // The client already resent on fresh connections as often as it may;
            // the row goes back to the queue without spending an attempt, and
            // without an answer to record.
            let seconds = Double.random(in: Self.resendDelay, using: &random)
            outcome.disposition = .retry(after: .milliseconds(Int(seconds * 1000)), countsAsAttempt: false)
            outcome.httpStatus = nil
            outcome.reason = nil
        case .holdForApp:
            outcome.disposition = .retry(after: Self.holdDelay, countsAsAttempt: false)
            appProblem = reason ?? "AppMisconfigured"
        case .fail(let invalidatesToken):
            outcome.disposition = .failed
            outcome.invalidatesToken = invalidatesToken
            if invalidatesToken { outcome.appleTimestamp = timestamp }
        }
        // Every attempt that did not deliver leaves an error row, also when a
        // not-processed request escalates to a counted attempt; only uncounted
        // requeues (nothing was learned, nothing was spent) leave none.
        if case .retry(_, false) = outcome.disposition, outcomeClass == .notProcessed {
            outcome.recordsError = false
        } else {
            outcome.recordsError = outcome.disposition != .delivered
        }
        return Decision(outcome: outcome, appProblem: appProblem)
    }

    /// A row the core refused: failed without spending an APNs request.
    func rejected(_ row: ClaimedNotification, _ failure: ValidationFailure) -> Outcome {
        Outcome(id: row.id, claimCount: row.claimCount, disposition: .failed, reason: failure.reason.rawValue, recordsError: true)
    }
}
