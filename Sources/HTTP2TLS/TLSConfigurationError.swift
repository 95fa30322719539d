/// Why a TLS context could not be built.
package enum TLSConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    case cannotCreateContext(String)
    case cannotLoadTrustStore(String)
    case cannotLoadCertificate(String)
    case cannotLoadPrivateKey(String)
    case keyDoesNotMatchCertificate(String)
    case clientIdentity(String)
    case keyLog(String)

    package var description: String {
        switch self {
        case .cannotCreateContext(let text): return "cannot create TLS context: \(text)"
        case .cannotLoadTrustStore(let text): return "cannot load CA certificates: \(text)"
        case .cannotLoadCertificate(let text): return "cannot load certificate: \(text)"
        case .cannotLoadPrivateKey(let text): return "cannot load private key: \(text)"
        case .keyDoesNotMatchCertificate(let text): return "private key does not match certificate: \(text)"
        case .clientIdentity(let text): return "cannot install client identity: \(text)"
        case .keyLog(let text): return "TLS key log (SSLKEYLOGFILE): \(text)"
        }
    }
}
