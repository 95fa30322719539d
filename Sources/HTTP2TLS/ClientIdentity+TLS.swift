import COpenSSL
import PushCrypto

extension ClientIdentity {
    /// Installs certificate, chain and key into an `SSL_CTX` the TLS layer is configuring.
    func install(into context: OpaquePointer) throws {
        try withOpenSSLObjects { certificate, privateKey, chain in
            guard SSL_CTX_use_certificate(context, certificate) == 1 else {
                throw CredentialError.openSSL("SSL_CTX_use_certificate")
            }
            guard SSL_CTX_use_PrivateKey(context, privateKey) == 1 else {
                throw CredentialError.openSSL("SSL_CTX_use_PrivateKey")
            }
            for intermediate in chain {
                // The context takes ownership of what it is given, so give it its own reference.
                guard X509_up_ref(intermediate) == 1 else { throw CredentialError.openSSL("X509_up_ref") }
                guard pgpush_SSL_CTX_add_extra_chain_cert(context, intermediate) == 1 else {
                    X509_free(intermediate)
                    throw CredentialError.openSSL("SSL_CTX_add_extra_chain_cert")
                }
            }
            guard SSL_CTX_check_private_key(context) == 1 else {
                throw CredentialError.openSSL("SSL_CTX_check_private_key")
            }
        }
    }
}
