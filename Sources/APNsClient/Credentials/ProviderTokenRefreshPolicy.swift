import Foundation

/// When a cached provider token is replaced.
///
/// Apple rejects a token older than an hour (403 ExpiredProviderToken) and a
/// connection that sees new tokens more often than every 20 minutes
/// (429 TooManyProviderTokenUpdates), so the age must lie between the two.
public struct ProviderTokenRefreshPolicy: Sendable, Equatable {
    public static let minimumAge: TimeInterval = 20 * 60
    public static let expiryAge: TimeInterval = 60 * 60
    /// As Pushy and apns2 do: ten minutes of margin for clock skew.
    public static let defaultRefreshAge: TimeInterval = 50 * 60

    /// A token at least this old is replaced before its next use.
    public let refreshAge: TimeInterval

    public init(refreshAge: TimeInterval = defaultRefreshAge) throws(ProviderTokenError) {
        guard refreshAge >= Self.minimumAge, refreshAge < Self.expiryAge else {
            throw .invalidRefreshAge(seconds: refreshAge)
        }
        self.refreshAge = refreshAge
    }

    /// 50 minutes.
    public static var standard: ProviderTokenRefreshPolicy {
        ProviderTokenRefreshPolicy(unchecked: defaultRefreshAge)
    }

    private init(unchecked refreshAge: TimeInterval) {
        self.refreshAge = refreshAge
    }
}
