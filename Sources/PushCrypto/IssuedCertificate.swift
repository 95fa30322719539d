/// A certificate issued by `SelfSignedAuthority` with its new private key, both PEM.
public struct IssuedCertificate: Sendable {
    public let certificatePEM: String
    /// Unencrypted PKCS#8; secret material.
    public let privateKeyPEM: String
}
