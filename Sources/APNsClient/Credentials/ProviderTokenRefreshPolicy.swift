import Foundation

/// When a cached provider token is replaced.
///
/// Apple rejects a token older than an hour (403 ExpiredProviderToken) and a
/// connection that sees new tokens more often than every 20 minutes
/// (429 TooManyProviderTokenUpdates), so the age must lie between the two.
package struct ProviderTokenRefreshPolicy: Sendable, Equatable {
    package static let minimumAge: TimeInterval = 20 * 60
    package static let expiryAge: TimeInterval = 60 * 60
    /// As Pushy and apns2 do: ten minutes of margin for clock skew.
    package static let defaultRefreshAge: TimeInterval = 50 * 60

    /// A token at least this old is replaced before its next use.
    package let refreshAge: TimeInterval

    package init(refreshAge: TimeInterval = defaultRefreshAge) throws(ProviderTokenError) {
        guard refreshAge >= Self.minimumAge, refreshAge < Self.expiryAge else {
            throw .invalidRefreshAge(seconds: refreshAge)
        }
        self.refreshAge = refreshAge
    }

    /// 50 minutes.
    package static var standard: ProviderTokenRefreshPolicy {
        ProviderTokenRefreshPolicy(unchecked: defaultRefreshAge)
    }

    private init(unchecked refreshAge: TimeInterval) {
        self.refreshAge = refreshAge
    }
}
