/// Who a provider token speaks for: the signing key's id (`kid`) and the team (`iss`).
public struct ProviderTokenIdentity: Sendable, Equatable {
    public let keyID: String
    public let teamID: String

    /// Checks both identifiers; the error names the one that is wrong.
    public init(keyID: String, teamID: String) throws(ProviderTokenError) {
        guard Self.isAppleIdentifier(keyID) else { throw .invalidKeyID(keyID) }
        guard Self.isAppleIdentifier(teamID) else { throw .invalidTeamID(teamID) }
        self.keyID = keyID
        self.teamID = teamID
    }

    /// Apple's key and team ids are 10 characters of upper-case letters and digits.
    /// Checking this also makes them safe to place in JSON without escaping.
    static func isAppleIdentifier(_ value: String) -> Bool {
        value.utf8.count == 10 && value.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        }
    }
}
