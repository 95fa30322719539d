import PushCrypto

/// What the simulator checks a provider token (JWT) against: the team, the key id and
/// the public half of the `.p8` key.
public struct ProviderTokenKey: Sendable {
    public var teamID: String
    public var keyID: String
    public var publicKey: ES256PublicKey

    public init(teamID: String, keyID: String, publicKey: ES256PublicKey) {
        self.teamID = teamID
        self.keyID = keyID
        self.publicKey = publicKey
    }
}
