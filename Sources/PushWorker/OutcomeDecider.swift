import Foundation
import PGPushCore
import PushQueue
import PushTransport

/// Carries a `Delivery`'s verdict into the outcome the queue writes, for every service:
/// which status, which reason text, whether an error row and a listed token go with it.
/// When a retried row is due again is `RetryRules`'. Pure: the same inputs and random
/// numbers give the same outcome.
struct OutcomeDecider {
    var retry: RetryConfiguration

    func decide(_ row: ClaimedNotification, _ delivery: Delivery, using random: inout some RandomNumberGenerator) -> Outcome {
        // An answer without a reason of its own shows its status.
        let reason = delivery.reason ?? delivery.status.map { "HTTP\($0)" }
        var outcome = Outcome(id: row.id, claimCount: row.claimCount, disposition: .failed, httpStatus: delivery.status,
                              reason: reason, detail: delivery.detail)
        outcome.apnsUniqueID = delivery.apnsUniqueID
        // The sender's own resends happened within this claim; what bounds a row is how
        // often it already went back to the queue uncounted (claims minus counted attempts).
        let history = RowHistory(attempts: row.attempts, uncountedRequeues: max(row.claimCount - row.attempts, 0))
        var nothingLearned = false
        switch delivery.verdict {
        case .delivered:
            outcome.disposition = .delivered
            outcome.reason = nil
            outcome.messageID = delivery.messageID
        case .failed(let listsTarget):
            outcome.invalidatesToken = listsTarget
            if listsTarget { outcome.appleTimestamp = delivery.targetInvalidSince }
        case .paused:
            outcome.disposition = .retry(after: RetryRules.pausedRowDelay, countsAsAttempt: false)
        case .serverTrouble, .throttled, .notProcessed:
            switch RetryRules.next(after: delivery.verdict, history: history, retry: retry, using: &random) {
            case .retry(let delay, let counted)?:
                outcome.disposition = .retry(after: delay, countsAsAttempt: counted)
                nothingLearned = !counted
            case .exhausted?, nil:
                break
            }
        }
        if nothingLearned {
            // Not processed and nothing spent: the row keeps its last answer.
            outcome.httpStatus = nil
            outcome.reason = nil
            outcome.detail = nil
        }
        // Every attempt that did not deliver leaves an error row, also when a not-processed
        // request escalates to a counted attempt; only uncounted requeues leave none.
        outcome.recordsError = outcome.disposition != .delivered && !nothingLearned
        return outcome
    }

    /// A row the service's rules refused: failed without spending a request.
    func rejected(_ row: ClaimedNotification, _ refusal: RowRefusal) -> Outcome {
        Outcome(id: row.id, claimCount: row.claimCount, disposition: .failed, reason: refusal.reason, detail: refusal.detail,
                recordsError: true)
    }
}
