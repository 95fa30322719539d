import APNsClient
import Foundation
import PGPushCore
import PushQueue

/// Carries `DeliveryPolicy`'s row action into the outcome the queue writes: which
/// status, which reason text, whether an error row and a listed token go with it.
/// Pure: the same inputs and random numbers give the same outcome.
struct OutcomeDecider {
    var retry: RetryConfiguration

    struct Decision: Equatable {
        var outcome: Outcome
        var action: RowAction
        /// For a paused scope: the reason to show in `app_health`.
        var pauseReason: String?
    }

    func decide(_ row: ClaimedNotification, _ result: DeliveryResult, using random: inout some RandomNumberGenerator) -> Decision {
        let meaning = result.meaning(topicWasExplicit: row.notification.topic != nil)
        let reason = Self.reasonText(result)
        // The client's own resends happened within this claim; what bounds a row is how
        // often it already went back to the queue uncounted (claims minus counted attempts).
        let history = RowHistory(attempts: row.attempts, uncountedRequeues: max(row.claimCount - row.attempts, 0),
                                 topicWasExplicit: row.notification.topic != nil)
        let action = DeliveryPolicy.rowAction(for: meaning, history: history, retry: retry, using: &random)
        var outcome = Outcome(id: row.id, claimCount: row.claimCount, disposition: .failed, httpStatus: result.status,
                              reason: reason)
        outcome.apnsUniqueID = result.apnsUniqueID.flatMap(UUID.init(uuidString:))
        var pauseReason: String?
        var requeuedUnprocessed = false
        switch action {
        case .deliver:
            outcome.disposition = .delivered
            outcome.reason = nil
        case .retry(let delay, let counted):
            outcome.disposition = .retry(after: delay, countsAsAttempt: counted)
            requeuedUnprocessed = meaning == .notProcessed && !counted
            if requeuedUnprocessed {
                // Nothing was learned and nothing spent: the row keeps its last answer.
                outcome.httpStatus = nil
                outcome.reason = nil
            }
        case .pause:
            outcome.disposition = .retry(after: DeliveryPolicy.pausedRowDelay, countsAsAttempt: false)
            pauseReason = Self.pauseReason(reason)
        case .fail(let listsToken):
            outcome.invalidatesToken = listsToken
            if listsToken { outcome.appleTimestamp = result.timestamp }
        }
        // Every attempt that did not deliver leaves an error row, also when a not-processed
        // request escalates to a counted attempt; only uncounted requeues leave none.
        outcome.recordsError = outcome.disposition != .delivered && !requeuedUnprocessed
        return Decision(outcome: outcome, action: action, pauseReason: pauseReason)
    }

    /// What the `last_reason` column shows: APNs's reason, the GOAWAY's reason, or for no
    /// answer the cause ("DeadlineExceeded", "ConnectionLost", …).
    static func reasonText(_ result: DeliveryResult) -> String? {
        if let failure = result.failure {
            if let reason = failure.apnsReason { return reason }
            return failure.cause.rawValue.prefix(1).uppercased() + failure.cause.rawValue.dropFirst()
        }
        if let status = result.status, !(200..<300).contains(status), result.reason == nil { return "HTTP\(status)" }
        return result.reason
    }

    /// The reason `app_health` shows for a pause: what to check, not only what APNs said.
    static func pauseReason(_ reason: String?) -> String {
        let said = reason ?? "AppMisconfigured"
        switch said {
        case APNsReason.expiredProviderToken.rawValue:
            return "\(said): APNs refused a provider token signed moments before; check this machine's clock (NTP) "
                + "and that the signing key is not revoked"
        case APNsReason.tooManyProviderTokenUpdates.rawValue:
            return "\(said): APNs refused a renewed provider token on a fresh connection"
        default:
            return said
        }
    }

    /// A row the core refused: failed without spending an APNs request.
    func rejected(_ row: ClaimedNotification, _ failure: ValidationFailure) -> Outcome {
        Outcome(id: row.id, claimCount: row.claimCount, disposition: .failed, reason: failure.reason.rawValue, recordsError: true)
    }
}
