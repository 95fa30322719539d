import Foundation
import Locking

/// The one provider token of a signing key, shared by every connection.
///
/// Apple counts token changes per connection, and signing per request or per
/// connection is what triggers 429 TooManyProviderTokenUpdates; so all
/// connections ask here, and a new token is signed only when the current one
/// reaches the policy's age, or once when APNs reports it expired.
/// Signing happens under the lock: it takes microseconds and guarantees that
/// callers racing for a refresh cause exactly one signature.
public final class ProviderTokenCache: Sendable {
    private struct State {
        var token: ProviderToken?
        var tokensSigned = 0
    }

    private let signer: ProviderTokenSigner
    private let policy: ProviderTokenRefreshPolicy
    private let now: @Sendable () -> Date
    private let state = Locked(State())

    /// `now` is the clock (injectable for tests); it should be NTP-disciplined, as APNs checks `iat`.
    public init(
        signer: ProviderTokenSigner,
        policy: ProviderTokenRefreshPolicy = .standard,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.signer = signer
        self.policy = policy
        self.now = now
    }

    /// The token to put on the next request: the cached one while it is younger
    /// than the refresh age, otherwise a newly signed one.
    public func currentToken() throws(ProviderTokenError) -> ProviderToken {
        let time = now()
        return try state.withLock { (state) throws(ProviderTokenError) -> ProviderToken in
            if let token = state.token, token.age(at: time) < policy.refreshAge {
                return token
            }
            return try Self.signNew(into: &state, signer: signer, at: time)
        }
    }

    /// After APNs answered 403 ExpiredProviderToken for `previous`: a new token,
    /// whatever the age rules say. Idempotent: when many connections report the
    /// same stale token, the first signs and the others get that same new token.
    public func refreshAfterExpired(previous: ProviderToken) throws(ProviderTokenError) -> ProviderToken {
        let time = now()
        return try state.withLock { (state) throws(ProviderTokenError) -> ProviderToken in
            if let token = state.token, token != previous {
                return token
            }
            return try Self.signNew(into: &state, signer: signer, at: time)
        }
    }

    /// The key id and team the tokens are for (for logs; no secret).
    public var identity: ProviderTokenIdentity { signer.identity }

    /// How many tokens this cache has signed (for metrics and tests).
    public var tokensSigned: Int {
        state.withLock { $0.tokensSigned }
    }

    private static func signNew(into state: inout State, signer: ProviderTokenSigner, at time: Date) throws(ProviderTokenError) -> ProviderToken {
        let token = try signer.sign(issuedAt: time)
        state.token = token
        state.tokensSigned += 1
        return token
    }
}
