/// Why a provider token (JWT) cannot be made.
public enum ProviderTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The Key ID is not 10 characters of A–Z and 0–9 (as shown in the developer account).
    case invalidKeyID(String)
    /// The Team ID is not 10 characters of A–Z and 0–9.
    case invalidTeamID(String)
    /// A refresh age outside what Apple allows (20 to 60 minutes).
    case invalidRefreshAge(seconds: Double)
    /// OpenSSL could not sign; the detail names the operation, never the key.
    case signingFailed(String)
    /// APNs refused a token signed moments before as expired; no new one is signed for this long.
    case refusedByAPNs(retryInSeconds: Int)

    public var description: String {
        switch self {
        case .invalidKeyID(let value):
            return "key id \"\(value)\" is invalid: it must be exactly 10 characters, A-Z and 0-9 (PGPUSH_KEY_ID)"
        case .invalidTeamID(let value):
            return "team id \"\(value)\" is invalid: it must be exactly 10 characters, A-Z and 0-9 (PGPUSH_TEAM_ID)"
        case .invalidRefreshAge(let seconds):
            return "provider token refresh age \(Int(seconds)) s is invalid: Apple allows a new token at most every 20 minutes and requires one at least every 60"
        case .signingFailed(let detail):
            return "signing the provider token failed: \(detail)"
        case .refusedByAPNs(let seconds):
            return "APNs refused a provider token signed moments before as expired: check this machine's clock (NTP) "
                + "and that the key is not revoked; the next token is signed in \(seconds) s"
        }
    }
}
