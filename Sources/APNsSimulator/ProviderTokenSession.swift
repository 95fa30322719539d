import Foundation
import PGPushCore

/// The provider-token state of one connection: which JWT the
/// connection uses and since when. A different valid JWT within 20 minutes of the
/// previous one is refused with 429 TooManyProviderTokenUpdates; a repeated JWT is
/// not verified again, only its age is checked.
package struct ProviderTokenSession: Sendable {
    /// APNs accepts a new token on a connection at most this often.
    package static let minimumUpdateInterval: TimeInterval = 20 * 60

    package private(set) var current: VerifiedProviderToken?
    package private(set) var adoptedAt: Date?

    package init() {}

    /// True once a request with a valid JWT was accepted on the connection.
    package var isAuthenticated: Bool { current != nil }

    /// nil when the request's token is acceptable; otherwise the answer to give.
    package mutating func check(authorization: String?, verifier: ProviderTokenVerifier, now: Date) -> SimulatorAnswer? {
        if let current, let authorization, let token = ProviderTokenVerifier.bearerToken(in: authorization), token == current.token {
            return ProviderTokenVerifier.checkAge(of: current, now: now).map { SimulatorAnswer($0.reason) }
        }
        switch verifier.verify(authorization: authorization, now: now) {
        case .failure(let rejection):
            return SimulatorAnswer(rejection.reason)
        case .success(let token):
            if current != nil, let adoptedAt, now.timeIntervalSince(adoptedAt) < Self.minimumUpdateInterval {
                return SimulatorAnswer(.tooManyProviderTokenUpdates)
            }
            current = token
            adoptedAt = now
            return nil
        }
    }
}
