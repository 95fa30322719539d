/// Settings for an `HTTP2Server`.
public struct HTTP2ServerConfiguration: Sendable {
    /// Address to bind (numeric, e.g. "127.0.0.1", "::", "0.0.0.0").
    public var host: String = "127.0.0.1"
    /// 0 picks an ephemeral port; read it from `HTTP2Server.port`.
    public var port: Int = 0
    /// Leaf certificate first, then any intermediates.
    public var certificateChain: PEMSource
    public var privateKey: PEMSource
    public var clientCertificates: ClientCertificatePolicy = .none
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced to every new connection.
    public var maxConcurrentStreams: Int = 100
    /// A connection that has not finished its TLS handshake by then is dropped.
    public var handshakeTimeout: Duration = .seconds(10)

    public init(certificateChain: PEMSource, privateKey: PEMSource) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }
}
