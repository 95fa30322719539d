import COpenSSL
import CShims
import PushCrypto

/// PEM text given inline or as a file path.
package enum PEMSource: Sendable, Equatable {
    case file(String)
    case text(String)
}

/// Whether the server asks TLS clients for a certificate (APNs certificate authentication).
package enum ClientCertificatePolicy: Sendable, Equatable {
    case none
    /// Ask for a certificate and accept any (the handler judges it by its subject).
    case request
    /// Require a certificate that chains to one of the CAs in this PEM file.
    case require(trustedCAFile: String)
}

/// The OpenSSL server context: TLS 1.2+, ALPN h2 (or HTTP/1.1, as configured), certificate chain and key from PEM.
///
/// `@unchecked Sendable`: the SSL_CTX is immutable after `init`; OpenSSL allows SSL_new from any thread.
final class ServerTLSContext: @unchecked Sendable {
    let context: OpaquePointer

    init(certificate: PEMSource, privateKey: PEMSource, clientCertificates: ClientCertificatePolicy,
         protocols: ServerProtocols = .h2) throws(TLSConfigurationError) {
        ERR_clear_error()
        guard let method = TLS_server_method(), let context = SSL_CTX_new(method) else {
            throw .cannotCreateContext(OpenSSLErrors.describe("SSL_CTX_new"))
        }
        self.context = context
        _ = pgpush_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION)
        _ = SSL_CTX_set_options(context, pgpush_SSL_OP_ALL() | pgpush_SSL_OP_NO_COMPRESSION()
            | pgpush_SSL_OP_NO_RENEGOTIATION() | pgpush_SSL_OP_IGNORE_UNEXPECTED_EOF())
        _ = pgpush_SSL_CTX_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))

        try Self.loadChain(certificate, into: context)
        try Self.loadKey(privateKey, into: context)
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw .keyDoesNotMatchCertificate(OpenSSLErrors.describe("check"))
        }

        switch clientCertificates {
        case .none:
            break
        case .request:
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, { _, _ in 1 })
        case .require(let caFile):
            guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                throw .cannotLoadTrustStore(OpenSSLErrors.describe(caFile))
            }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        }

        // What `protocols` accepts, h2 first, or nothing: a client that offers none of them
        // gets a fatal alert. The choice travels in the callback's argument, as a number.
        SSL_CTX_set_alpn_select_cb(context, { _, out, outLength, offered, offeredLength, argument in
            guard let offered, let out, let outLength,
                  let protocols = ServerProtocols(rawValue: Int(bitPattern: argument)) else { return SSL_TLSEXT_ERR_ALERT_FATAL }
            let count = Int(offeredLength)
            for wanted in [ALPN.h2, ALPN.http1] where protocols.accepts(wanted) {
                var index = 0
                while index < count {
                    let length = Int(offered[index])
                    if index + length < count,
                       UnsafeBufferPointer(start: offered + index + 1, count: length).elementsEqual(wanted.utf8) {
                        out.pointee = offered + index + 1
                        outLength.pointee = UInt8(length)
                        return SSL_TLSEXT_ERR_OK
                    }
                    index += 1 + length
                }
            }
            return SSL_TLSEXT_ERR_ALERT_FATAL
        }, UnsafeMutableRawPointer(bitPattern: protocols.rawValue))
    }

    deinit { SSL_CTX_free(context) }

    private static func withBIO<T>(_ source: PEMSource, _ body: (OpaquePointer) throws(TLSConfigurationError) -> T) throws(TLSConfigurationError) -> T {
        let bio: OpaquePointer?
        switch source {
        case .file(let path): bio = BIO_new_file(path, "r")
        case .text(let text):
            let bytes = Array(text.utf8)
            bio = BIO_new(BIO_s_mem())
            if let bio { _ = bytes.withUnsafeBytes { BIO_write(bio, $0.baseAddress, Int32($0.count)) } }
        }
        guard let bio else { throw .cannotLoadCertificate(OpenSSLErrors.describe("cannot open PEM source")) }
        defer { BIO_free(bio) }
        return try body(bio)
    }

    private static func loadChain(_ source: PEMSource, into context: OpaquePointer) throws(TLSConfigurationError) {
        try withBIO(source) { (bio) throws(TLSConfigurationError) in
            guard let leaf = PEM_read_bio_X509(bio, nil, nil, nil) else {
                throw .cannotLoadCertificate(OpenSSLErrors.describe("no PEM certificate"))
            }
            defer { X509_free(leaf) }
            guard SSL_CTX_use_certificate(context, leaf) == 1 else {
                throw .cannotLoadCertificate(OpenSSLErrors.describe("SSL_CTX_use_certificate"))
            }
            // Further certificates in the same PEM are the chain; the context takes ownership.
            while let next = PEM_read_bio_X509(bio, nil, nil, nil) {
                if pgpush_SSL_CTX_add_extra_chain_cert(context, next) != 1 {
                    X509_free(next)
                    throw .cannotLoadCertificate(OpenSSLErrors.describe("chain certificate"))
                }
            }
            ERR_clear_error()  // the loop ends on an expected "no start line"
        }
    }

    private static func loadKey(_ source: PEMSource, into context: OpaquePointer) throws(TLSConfigurationError) {
        try withBIO(source) { (bio) throws(TLSConfigurationError) in
            guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
                throw .cannotLoadPrivateKey(OpenSSLErrors.describe("no PEM private key"))
            }
            defer { EVP_PKEY_free(key) }
            // The certificate is already in place, so OpenSSL refuses here a key that does not match it.
            guard SSL_CTX_use_PrivateKey(context, key) == 1 else {
                throw .keyDoesNotMatchCertificate(OpenSSLErrors.describe("SSL_CTX_use_PrivateKey"))
            }
        }
    }
}
