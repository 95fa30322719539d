import Foundation
import PGPushCore

/// The result of one attempt at one claimed row, as the queue records it.
package struct Outcome: Sendable, Equatable {
    package enum Disposition: Sendable, Equatable {
        /// The service accepted it.
        case delivered
        /// Final failure: the service refused it, retries ran out, or pgpush refused it before sending.
        case failed
        /// Past `expires_at` before it could be sent.
        case expired
        /// Back to `queued`, due after `delay`. `countsAsAttempt: false` gives
        /// the claim's attempt back (request certainly not processed, fresh
        /// JWT needed, app paused, worker shutting down).
        case retry(after: Duration, countsAsAttempt: Bool)
    }

    package var id: Int64
    package var claimCount: Int
    package var disposition: Disposition
    /// HTTP status of the answer; nil when none came (or none was asked for).
    package var httpStatus: Int?
    /// The service's reason or pgpush's; nil with `delivered`.
    package var reason: String?
    /// The service's own words about a refusal (FCM's error message), or pgpush's sentence
    /// for a row it refused; kept in the `delivery_errors` row.
    package var detail: String?
    /// The service's id of the accepted message (`message_id`).
    package var messageID: String?
    /// Add a `pgpush.delivery_errors` row for this attempt.
    package var recordsError: Bool
    /// Upsert the row's token into `pgpush.invalid_tokens`, with Apple's timestamp when known;
    /// for a channel row, mark its channel in `pgpush.channels` with the reason instead.
    package var invalidatesToken: Bool
    package var appleTimestamp: Date?
    /// The answer's `apns-unique-id` header; nil when it had none (or no answer came). Written to
    /// the row, replacing the previous answer's, and to the `delivery_errors` row when one is
    /// recorded; an outcome that `keepsLastAnswer` leaves the row's value as it was.
    package var apnsUniqueID: UUID?

    package init(id: Int64, claimCount: Int, disposition: Disposition, httpStatus: Int? = nil, reason: String? = nil,
                detail: String? = nil, messageID: String? = nil, recordsError: Bool = false, invalidatesToken: Bool = false, appleTimestamp: Date? = nil,
                apnsUniqueID: UUID? = nil) {
        self.id = id
        self.claimCount = claimCount
        self.disposition = disposition
        self.httpStatus = httpStatus
        self.reason = reason
        self.detail = detail
        self.messageID = messageID
        self.recordsError = recordsError
        self.invalidatesToken = invalidatesToken
        self.appleTimestamp = appleTimestamp
        self.apnsUniqueID = apnsUniqueID
    }

    /// An uncounted return to the queue with nothing learned (not processed,
    /// shutdown) keeps the previous attempt's `last_status`, `last_reason` and `apns_unique_id`.
    package var keepsLastAnswer: Bool {
        guard case .retry(_, let counts) = disposition else { return false }
        return !counts && httpStatus == nil && reason == nil
    }

    /// Accepted (200) with no reason, no error row and no token to invalidate: the common
    /// case, which the queue writes with a leaner statement (its message id included).
    var isPlainDelivery: Bool {
        disposition == .delivered && httpStatus == 200 && reason == nil && !recordsError && !invalidatesToken
    }

    package static func delivered(_ row: ClaimedNotification) -> Outcome {
        Outcome(id: row.id, claimCount: row.claimCount, disposition: .delivered, httpStatus: 200)
    }

    /// Back to the queue at once without spending an attempt, keeping the last answer as it was.
    package static func released(_ row: ClaimedNotification) -> Outcome {
        Outcome(id: row.id, claimCount: row.claimCount, disposition: .retry(after: .zero, countsAsAttempt: false))
    }

    /// What a row ends with when PostgreSQL refused the statement that wrote its outcome
    /// for this row's sake alone (`OutcomeWriter` finds it by splitting the batch): the
    /// answer's status and the disposition, none of its other values. A delivered row stays
    /// delivered (APNs took it); anything else ends `failed` with `OutcomeRefused`.
    package var refusedByDatabase: Outcome {
        let delivered = disposition == .delivered
        return Outcome(id: id, claimCount: claimCount, disposition: delivered ? .delivered : .failed, httpStatus: httpStatus,
                       reason: delivered ? nil : Self.refusedReason, recordsError: !delivered)
    }

    package static let refusedReason = "OutcomeRefused"

    // MARK: Values from the network, as PostgreSQL can store them

    /// The most bytes of a reason the queue stores (`last_reason`, `delivery_errors.reason`,
    /// `invalid_tokens.reason`, `app_health.reason`). APNs's reasons are short names; past
    /// this a "reason" is someone else's page or an attack, and every attempt would copy it
    /// into two rows.
    package static let maxReasonBytes = 512

    /// This outcome with its values from the answer made storable: the reason cleaned and
    /// bounded (`storableText`), a timestamp outside 1970–9999 dropped (PostgreSQL refuses a
    /// `to_timestamp` far outside that with 22008, and APNs means no such date).
    var storable: Outcome {
        var copy = self
        copy.reason = reason.map { Self.storableText($0) }
        copy.detail = detail.map { Self.storableText($0) }
        copy.messageID = messageID.map { Self.storableText($0) }
        if let timestamp = appleTimestamp, !Self.storableDates.contains(timestamp.timeIntervalSince1970) {
            copy.appleTimestamp = nil
        }
        return copy
    }

    /// 1970-01-01 up to the end of 9999.
    static let storableDates: ClosedRange<Double> = 0...253_402_300_799

    /// `text` with every control character (C0 with NUL, DEL, C1) and the line and paragraph
    /// separators replaced by U+FFFD, cut to `maxBytes` of UTF-8 at a character boundary
    /// with "…" to show the cut. PostgreSQL's text cannot hold NUL at all; the others would
    /// reach every log, terminal and page that shows the reason.
    package static func storableText(_ text: String, maxBytes: Int = maxReasonBytes) -> String {
        let ellipsis: Unicode.Scalar = "\u{2026}"
        var kept: [Unicode.Scalar] = []
        var bytes = 0
        // How many of `kept` still leave room for the ellipsis, should the text not fit.
        var keptBeforeEllipsis = 0
        for scalar in text.unicodeScalars {
            let clean: Unicode.Scalar = scalar.isHiddenInText ? "\u{FFFD}" : scalar
            bytes += UTF8.width(clean)
            if bytes > maxBytes {
                var cut = String.UnicodeScalarView(kept.prefix(keptBeforeEllipsis))
                cut.append(ellipsis)
                return String(cut)
            }
            kept.append(clean)
            if bytes + UTF8.width(ellipsis) <= maxBytes { keptBeforeEllipsis = kept.count }
        }
        return String(String.UnicodeScalarView(kept))
    }
}
