import COpenSSL
import CShims
import PushCrypto

/// The OpenSSL client context shared by connections: TLS 1.2+, ALPN h2 (and http/1.1 when
/// `offersHTTP1`), peer verification
/// against the system trust store plus an optional extra CA file, optional client identity,
/// optionally its secrets written to a key log. There is deliberately no way to turn
/// verification off.
///
/// `@unchecked Sendable`: the SSL_CTX is immutable after `init`; OpenSSL allows SSL_new from any thread.
package final class ClientTLSContext: @unchecked Sendable {
    let context: OpaquePointer
    /// Held here because the SSL_CTX points at it without retaining it.
    private let keyLog: TLSKeyLog?
    /// ALPN offers `http/1.1` after `h2`, and a connection whose server picks it speaks
    /// HTTP/1.1 (`HTTP1`); otherwise only h2 is offered and accepted.
    package let offersHTTP1: Bool

    package init(extraCAFile: String? = nil, identity: ClientIdentity? = nil,
                keyLog: TLSKeyLog? = nil, offersHTTP1: Bool = false) throws(TLSConfigurationError) {
        ERR_clear_error()
        guard let method = TLS_client_method(), let context = SSL_CTX_new(method) else {
            throw .cannotCreateContext(OpenSSLErrors.describe("SSL_CTX_new"))
        }
        self.context = context
        self.keyLog = keyLog
        self.offersHTTP1 = offersHTTP1
        keyLog?.install(into: context)
        _ = pgpush_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION)
        _ = SSL_CTX_set_options(context, pgpush_SSL_OP_ALL() | pgpush_SSL_OP_NO_COMPRESSION()
            | pgpush_SSL_OP_NO_RENEGOTIATION() | pgpush_SSL_OP_IGNORE_UNEXPECTED_EOF())
        _ = pgpush_SSL_CTX_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        guard SSL_CTX_set_default_verify_paths(context) == 1 else {
            throw .cannotLoadTrustStore(OpenSSLErrors.describe("system trust store"))
        }
        if let extraCAFile {
            guard SSL_CTX_load_verify_locations(context, extraCAFile, nil) == 1 else {
                throw .cannotLoadTrustStore(OpenSSLErrors.describe(extraCAFile))
            }
        }
        // Returns 0 on success, unlike most of OpenSSL.
        let protocols = offersHTTP1 ? ALPN.h2AndHTTP1Wire : ALPN.h2Wire
        guard SSL_CTX_set_alpn_protos(context, protocols, UInt32(protocols.count)) == 0 else {
            throw .cannotCreateContext(OpenSSLErrors.describe("ALPN"))
        }
        if let identity {
            do { try identity.install(into: context) }
            catch { throw .clientIdentity(String(describing: error)) }
        }
    }

    deinit { SSL_CTX_free(context) }
}
