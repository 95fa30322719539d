import COpenSSL
import Foundation

/// A TLS client certificate and its private key (APNs certificate authentication).
///
/// Immutable after loading; the OpenSSL objects it owns are freed in `deinit`.
/// (Interface fixed early so the TLS layer can be written against it; the
/// loading code is filled in by the credentials work.)
public final class ClientIdentity: @unchecked Sendable {
    /// Loads a PKCS#12 file (certificate + key) protected by `password`.
    public static func loadPKCS12(path: String, password: String?) throws -> ClientIdentity {
        throw CredentialError.notImplemented
    }

    /// Loads a PEM certificate and a PEM private key (they may be the same file).
    public static func loadPEM(certificatePath: String, keyPath: String) throws -> ClientIdentity {
        throw CredentialError.notImplemented
    }

    /// Installs certificate, chain and key into an `SSL_CTX` the TLS layer is configuring.
    func install(into context: OpaquePointer) throws {
        throw CredentialError.notImplemented
    }
}

public enum CredentialError: Error, Sendable {
    case notImplemented
}
