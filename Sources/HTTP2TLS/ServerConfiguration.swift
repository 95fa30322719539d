/// Settings for an `HTTP2Server`.
package struct HTTP2ServerConfiguration: Sendable {
    /// Address to bind (numeric, e.g. "127.0.0.1", "::", "0.0.0.0").
    package var host: String = "127.0.0.1"
    /// 0 picks an ephemeral port; read it from `HTTP2Server.port`.
    package var port: Int = 0
    /// Leaf certificate first, then any intermediates.
    package var certificateChain: PEMSource
    package var privateKey: PEMSource
    package var clientCertificates: ClientCertificatePolicy = .none
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced to every new connection.
    package var maxConcurrentStreams: Int = 100
    /// A connection that has not finished its TLS handshake by then is dropped.
    package var handshakeTimeout: Duration = .seconds(10)
    /// What ALPN may agree to: h2 (the default), HTTP/1.1 only (a push service that does not
    /// speak h2), or either, h2 preferred.
    package var protocols: ServerProtocols = .h2

    package init(certificateChain: PEMSource, privateKey: PEMSource) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }
}

/// The protocols a server accepts in ALPN.
package enum ServerProtocols: Int, Sendable {
    case h2 = 1
    case http1 = 2
    case h2AndHTTP1 = 3

    func accepts(_ selected: String?) -> Bool {
        switch selected {
        case ALPN.h2: self != .http1
        case ALPN.http1: self != .h2
        default: false
        }
    }
}
