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

    func decide(_ row: ClaimedNotification, _ result: SendResult, using random: inout some RandomNumberGenerator) -> Decision {
        let status: Int?
        let reason: String?
        var timestamp: Date? = nil
        let outcomeClass: OutcomeClass
        switch result.answer {
        case .response(let code, let answerReason, let answerTimestamp):
            status = code
            reason = answerReason ?? (code == 200 ? nil : "HTTP\(code)")
            timestamp = answerTimestamp
            outcomeClass = ReasonCatalogue.classify(status: code, reason: answerReason,
                                                    topicWasExplicit: row.notification.topic != nil)
        case .notProcessed:
            status = nil
            reason = nil
            outcomeClass = .notProcessed
        case .noResponse:
            status = nil
            reason = "NoResponse"
            outcomeClass = .retryServerError
        }
        let decision = RetryPolicy.decide(outcomeClass, attempts: row.attempts,
                                          freshConnectionResends: result.freshConnectionResends,
                                          configuration: retry, using: &random)
        var outcome = Outcome(id: row.id, claimCount: row.claimCount, disposition: .failed, httpStatus: status,
                              reason: reason, recordsError: outcomeClass != .delivered && outcomeClass != .notProcessed)
        var appProblem: String?
        switch decision {
        case .delivered:
            outcome.disposition = .delivered
            outcome.reason = nil
        case .retry(let delay, let counts):
            outcome.disposition = .retry(after: delay, countsAsAttempt: counts)
        case .resendOnFreshConnection:
            // The client already resent on fresh connections as often as it may;
            // the row goes back to the queue without spending an attempt.
            let seconds = Double.random(in: Self.resendDelay, using: &random)
            outcome.disposition = .retry(after: .milliseconds(Int(seconds * 1000)), countsAsAttempt: false)
        case .holdForApp:
            outcome.disposition = .retry(after: Self.holdDelay, countsAsAttempt: false)
            appProblem = reason ?? "AppMisconfigured"
        case .fail(let invalidatesToken):
            outcome.disposition = .failed
            outcome.invalidatesToken = invalidatesToken
            if invalidatesToken { outcome.appleTimestamp = timestamp }
        }
        return Decision(outcome: outcome, appProblem: appProblem)
    }

    /// A row the core refused: failed without spending an APNs request.
    func rejected(_ row: ClaimedNotification, _ failure: ValidationFailure) -> Outcome {
        Outcome(id: row.id, claimCount: row.claimCount, disposition: .failed, reason: failure.reason.rawValue, recordsError: true)
    }
}
