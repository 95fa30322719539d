import PGPushCore

/// Why a provider token was refused: always a 403 reason.
public struct ProviderTokenRejection: Error, Sendable, Equatable {
    public let reason: APNsReason
    public init(_ reason: APNsReason) { self.reason = reason }
}
