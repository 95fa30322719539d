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
package final class ProviderTokenCache: Sendable {
    private struct State {
        var token: ProviderToken?
        var tokensSigned = 0
        /// The last token signed because APNs refused its predecessor, and until when a
        /// refusal of it is not answered by signing again.
        var renewal: (token: ProviderToken, holdUntil: Date, streak: Int, refusedAgain: Bool)?
    }

    /// What `renewAfterRefusal` did.
    package enum Renewal: Sendable, Equatable {
        /// The token to send with from now on (newly signed, or already renewed by another caller).
        case renewed(ProviderToken)
        /// The refused token was itself signed because of a refusal, moments ago: the
        /// clock or the key is at fault, and signing again would only storm APNs.
        case refusedAgain(signedSecondsAgo: Int)
    }

    /// After a token signed because of a refusal is refused too, the next signature waits
    /// this long, doubling up to `longestRenewalHold`.
    package static let firstRenewalHold: TimeInterval = 60
    package static let longestRenewalHold: TimeInterval = 20 * 60

    private let signer: ProviderTokenSigner
    private let policy: ProviderTokenRefreshPolicy
    private let now: @Sendable () -> Date
    private let state = Locked(State())

    /// `now` is the clock (injectable for tests); it should be NTP-disciplined, as APNs checks `iat`.
    package init(
        signer: ProviderTokenSigner,
        policy: ProviderTokenRefreshPolicy = .standard,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.signer = signer
        self.policy = policy
        self.now = now
    }

    /// The token to put on the next request: the cached one while it is younger
    /// than the refresh age, otherwise a newly signed one. While a renewed token that
    /// APNs refused again is on hold, no request should be sent at all: it would be
    /// refused too.
    package func currentToken() throws(ProviderTokenError) -> ProviderToken {
        let time = now()
        return try state.withLock { (state) throws(ProviderTokenError) -> ProviderToken in
            if let renewal = state.renewal, renewal.refusedAgain, renewal.token == state.token, time < renewal.holdUntil {
                throw .refusedByAPNs(retryInSeconds: Int(renewal.holdUntil.timeIntervalSince(time).rounded(.up)))
            }
            if let token = state.token, token.age(at: time) < policy.refreshAge {
                return token
            }
            return try Self.signNew(into: &state, signer: signer, at: time)
        }
    }

    /// After APNs answered 403 ExpiredProviderToken for `previous`. APNs keeps refusing a
    /// token it called expired, so a new one is signed, whatever the age rules say; when
    /// many requests report the same refused token, the first signs and the others get
    /// that same new token. A token that was itself signed because of a refusal and is
    /// refused again points at the clock or a revoked key: no new signature until a hold
    /// (one minute, doubling to twenty) has passed.
    package func renewAfterRefusal(of previous: ProviderToken) throws(ProviderTokenError) -> Renewal {
        try renewAfterRefusal(ofJWT: previous.jwt)
    }

    /// `renewAfterRefusal(of:)` for the JWT as it was written on the wire.
    package func renewAfterRefusal(ofJWT previous: String) throws(ProviderTokenError) -> Renewal {
        let time = now()
        return try state.withLock { (state) throws(ProviderTokenError) -> Renewal in
            if let token = state.token, token.jwt != previous {
                return .renewed(token)
            }
            var streak = 0
            if let renewal = state.renewal, renewal.token.jwt == previous {
                guard time >= renewal.holdUntil else {
                    state.renewal?.refusedAgain = true
                    return .refusedAgain(signedSecondsAgo: max(0, Int(renewal.token.age(at: time))))
                }
                streak = renewal.streak + 1
            }
            let token = try Self.signNew(into: &state, signer: signer, at: time)
            let hold = min(Self.firstRenewalHold * Double(1 << min(streak, 16)), Self.longestRenewalHold)
            state.renewal = (token, time.addingTimeInterval(hold), streak, false)
            return .renewed(token)
        }
    }

    /// The key id and team the tokens are for (for logs; no secret).
    package var identity: ProviderTokenIdentity { signer.identity }

    /// How many tokens this cache has signed (for metrics and tests).
    package var tokensSigned: Int {
        state.withLock { $0.tokensSigned }
    }

    private static func signNew(into state: inout State, signer: ProviderTokenSigner, at time: Date) throws(ProviderTokenError) -> ProviderToken {
        let token = try signer.sign(issuedAt: time)
        state.token = token
        state.tokensSigned += 1
        return token
    }
}
