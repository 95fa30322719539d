import Foundation

/// A provider token whose signature, key id and team checked out.
public struct VerifiedProviderToken: Sendable, Equatable, CustomStringConvertible {
    /// The compact JWT text (secret: never logged).
    public let token: String
    public let issuedAt: Date

    /// Leaves the token out: it is a credential.
    public var description: String { "VerifiedProviderToken(issued at \(issuedAt))" }
}
