/// A certificate issued by `SelfSignedAuthority` with its new private key, both PEM.
package struct IssuedCertificate: Sendable {
    package let certificatePEM: String
    /// Unencrypted PKCS#8; secret material.
    package let privateKeyPEM: String
}
