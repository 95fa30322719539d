import Foundation
import PGPushCore

/// A row this worker holds under a lease, ready to validate and send.
public struct ClaimedNotification: Sendable, Equatable {
    public let notification: PushNotification
    /// Which claim of the row this is; every outcome write names it, so a
    /// write from a lease that was taken over matches nothing.
    public let claimCount: Int
    /// The `attempts` column after this claim counted its attempt.
    public let attempts: Int

    public var id: Int64 { notification.id }

    public init(notification: PushNotification, claimCount: Int, attempts: Int) {
        self.notification = notification
        self.claimCount = claimCount
        self.attempts = attempts
    }
}

/// What one claim call did.
public struct ClaimResult: Sendable {
    /// Rows now `sending` under this worker's lease.
    public var claimed: [ClaimedNotification]
    /// Rows that were due but past `expires_at`: now `expired`, never sent.
    public var expiredIDs: [Int64]
    /// Rows whose token `pgpush.invalid_tokens` lists as `Unregistered` or `ExpiredToken`
    /// (now `failed` with `KnownInvalidToken`), or whose channel `pgpush.channels` records as
    /// deleted (`failed` with `KnownDeletedChannel`): never sent.
    public var knownInvalidIDs: [Int64]
}
