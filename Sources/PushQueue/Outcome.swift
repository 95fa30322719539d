import Foundation

/// The result of one attempt at one claimed row, as the queue records it.
public struct Outcome: Sendable, Equatable {
    public enum Disposition: Sendable, Equatable {
        /// APNs accepted it (200).
        case delivered
        /// Final failure: APNs rejected it, retries ran out, or pgpush refused it before sending.
        case failed
        /// Past `expires_at` before it could be sent.
        case expired
        /// Back to `queued`, due after `delay`. `countsAsAttempt: false` gives
        /// the claim's attempt back (request certainly not processed, fresh
        /// JWT needed, app paused, worker shutting down).
        case retry(after: Duration, countsAsAttempt: Bool)
    }

    public var id: Int64
    public var claimCount: Int
    public var disposition: Disposition
    /// HTTP status of the answer; nil when none came (or none was asked for).
    public var httpStatus: Int?
    /// APNs reason or pgpush reason; nil with `delivered`.
    public var reason: String?
    /// Add a `pgpush.delivery_errors` row for this attempt.
    public var recordsError: Bool
    /// Upsert the row's token into `pgpush.invalid_tokens`, with Apple's timestamp when known;
    /// for a channel row, mark its channel in `pgpush.channels` with the reason instead.
    public var invalidatesToken: Bool
    public var appleTimestamp: Date?
    /// The answer's `apns-unique-id` header; nil when it had none (or no answer came). Written to
    /// the row, replacing the previous answer's, and to the `delivery_errors` row when one is
    /// recorded; an outcome that `keepsLastAnswer` leaves the row's value as it was.
    public var apnsUniqueID: UUID?

    public init(id: Int64, claimCount: Int, disposition: Disposition, httpStatus: Int? = nil, reason: String? = nil,
                recordsError: Bool = false, invalidatesToken: Bool = false, appleTimestamp: Date? = nil,
                apnsUniqueID: UUID? = nil) {
        self.id = id
        self.claimCount = claimCount
        self.disposition = disposition
        self.httpStatus = httpStatus
        self.reason = reason
        self.recordsError = recordsError
        self.invalidatesToken = invalidatesToken
        self.appleTimestamp = appleTimestamp
        self.apnsUniqueID = apnsUniqueID
    }

    /// An uncounted return to the queue with nothing learned (not processed,
    /// shutdown) keeps the previous attempt's `last_status`, `last_reason` and `apns_unique_id`.
    public var keepsLastAnswer: Bool {
        guard case .retry(_, let counts) = disposition else { return false }
        return !counts && httpStatus == nil && reason == nil
    }

    /// Accepted (200) with no reason, no error row and no token to invalidate: the common
    /// case, which the queue writes with a leaner statement.
    var isPlainDelivery: Bool {
        disposition == .delivered && httpStatus == 200 && reason == nil && !recordsError && !invalidatesToken
    }

    public static func delivered(_ row: ClaimedNotification) -> Outcome {
        Outcome(id: row.id, claimCount: row.claimCount, disposition: .delivered, httpStatus: 200)
    }

    /// Back to the queue at once without spending an attempt, keeping the last answer as it was.
    public static func released(_ row: ClaimedNotification) -> Outcome {
        Outcome(id: row.id, claimCount: row.claimCount, disposition: .retry(after: .zero, countsAsAttempt: false))
    }
}
