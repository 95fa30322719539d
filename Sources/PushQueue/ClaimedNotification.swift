import Foundation
import PGPushCore

/// A row this worker holds under a lease, ready to validate and send.
package struct ClaimedNotification: Sendable, Equatable {
    package let notification: PushNotification
    /// Which claim of the row this is; every outcome write names it, so a
    /// write from a lease that was taken over matches nothing.
    package let claimCount: Int
    /// The `attempts` column after this claim counted its attempt.
    package let attempts: Int

    package var id: Int64 { notification.id }

    package init(notification: PushNotification, claimCount: Int, attempts: Int) {
        self.notification = notification
        self.claimCount = claimCount
        self.attempts = attempts
    }
}

/// What one claim call did.
package struct ClaimResult: Sendable {
    /// Rows now `sending` under this worker's lease.
    package var claimed: [ClaimedNotification]
    /// Rows that were due but past `expires_at`: now `expired`, never sent.
    package var expiredIDs: [Int64]
    /// Rows whose token `pgpush.invalid_tokens` lists as `Unregistered` or `ExpiredToken`
    /// (now `failed` with `KnownInvalidToken`), or whose channel `pgpush.channels` records as
    /// deleted (`failed` with `KnownDeletedChannel`): never sent.
    package var knownInvalidIDs: [Int64]
}
