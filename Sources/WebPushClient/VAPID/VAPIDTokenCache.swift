import Foundation
import Locking

/// One VAPID token per push service origin, shared by every request to it, signed again
/// shortly before it expires. An application sends to a handful of origins (the browsers'
/// push services), so the cache stays small.
package final class VAPIDTokenCache: Sendable {
    /// A token is replaced when less than this is left of it: a request signed with it then
    /// still reaches the push service well before `exp`.
    package static let renewBefore: TimeInterval = 3600

    private let signer: VAPIDSigner
    private let now: @Sendable () -> Date
    private let tokens = Locked([String: VAPIDToken]())

    /// `now` is the clock (injectable for tests).
    package init(signer: VAPIDSigner, now: @escaping @Sendable () -> Date = Date.init) {
        self.signer = signer
        self.now = now
    }

    /// The token for `audience`, signed now if there is none or it is about to expire.
    package func token(for audience: String) throws(VAPIDError) -> VAPIDToken {
        let instant = now()
        if let kept = tokens.withLock({ $0[audience] }), !Self.needsRenewal(kept, at: instant) { return kept }
        let signed = try signer.sign(audience: audience, now: instant)
        tokens.withLock { $0[audience] = signed }
        return signed
    }

    /// The push service refused the token for `audience`: the next request gets one signed
    /// anew (a token made under a clock since corrected, or with a key since replaced, is not
    /// sent again).
    package func forget(_ audience: String) {
        _ = tokens.withLock { $0.removeValue(forKey: audience) }
    }

    static func needsRenewal(_ token: VAPIDToken, at instant: Date) -> Bool {
        token.expiresAt.timeIntervalSince(instant) < renewBefore
    }
}
