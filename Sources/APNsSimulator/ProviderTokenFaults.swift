import Foundation

/// The fault plan's provider-token faults, shared by every connection: tokens gone stale
/// for good after a number of requests, or every token called expired.
///
/// APNs refuses a JWT it has once called expired on every later request and every
/// connection, while a newly signed one is accepted; a client that only retries, or only
/// reconnects, with the same JWT never gets through. Staleness is judged by the token's
/// exact compact text, so a token re-signed with the same `iat` and key id counts as new.
struct ProviderTokenFaults {
    private let staleAfterRequests: Int?
    private let expireEveryToken: Bool
    /// Accepted before the turn; becomes `stale` when it comes.
    private var accepted: Set<String> = []
    private var stale: Set<String> = []
    private var turned = false

    init(plan: FaultPlan) {
        staleAfterRequests = plan.staleProviderTokensAfterRequests
        expireEveryToken = plan.expireEveryProviderToken
    }

    /// Called before each request is judged with how many requests have arrived so far,
    /// that one included: the request after the threshold is the first to meet stale tokens.
    mutating func requestArrived(total: Int) {
        guard let staleAfterRequests, !turned, total > staleAfterRequests else { return }
        stale = accepted
        accepted = []
        turned = true
    }

    /// The 403 for a token the plan has expired, asked before the connection's own checks;
    /// nil lets those judge it. The connection's token state is left alone: one that had
    /// adopted the token still counts its twenty minutes from then, so a fresh token on it
    /// may be refused 429 TooManyProviderTokenUpdates, as APNs does.
    func refusal(authorization: String?, verifier: ProviderTokenVerifier, now: Date) -> SimulatorAnswer? {
        guard !stale.isEmpty || expireEveryToken,
              let authorization, let token = ProviderTokenVerifier.bearerToken(in: authorization) else { return nil }
        if stale.contains(token) { return SimulatorAnswer(.expiredProviderToken) }
        if expireEveryToken, case .success = verifier.verify(token: token, now: now) {
            return SimulatorAnswer(.expiredProviderToken)
        }
        return nil
    }

    /// Notes a token a connection accepted, so that it can go stale.
    mutating func noteAccepted(_ token: String) {
        guard staleAfterRequests != nil, !turned else { return }
        accepted.insert(token)
    }
}
