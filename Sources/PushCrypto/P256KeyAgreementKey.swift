import COpenSSL
import Foundation

/// An EC P-256 key pair for key agreement (ECDH): the sender's key Web Push makes afresh for
/// every message, and a browser subscription's key in the simulator and in tests. Public keys
/// travel as uncompressed points (0x04 ‖ x ‖ y, 65 bytes), as a subscription's `p256dh` does.
///
/// `@unchecked Sendable`: the EVP_PKEY is never changed after it is made, and each derivation
/// uses a context of its own.
package final class P256KeyAgreementKey: @unchecked Sendable {
    static let publicKeyLength = 65
    static let privateKeyLength = 32

    private let key: OpaquePointer
    /// The public key, uncompressed.
    package let publicKey: [UInt8]

    private init(owning key: OpaquePointer) throws(WebPushCryptoError) {
        self.key = key
        guard let encoded = Self.uncompressedPublicKey(of: key) else {
            EVP_PKEY_free(key)
            throw .openSSL("EVP_PKEY_get1_encoded_public_key")
        }
        publicKey = encoded
    }

    /// An EC key's public point, uncompressed (65 bytes for P-256); nil when OpenSSL gives none.
    static func uncompressedPublicKey(of key: OpaquePointer) -> [UInt8]? {
        var encoded: UnsafeMutablePointer<UInt8>?
        let length = EVP_PKEY_get1_encoded_public_key(key, &encoded)
        defer { pgpush_OPENSSL_free(encoded) }
        guard length == publicKeyLength, let encoded else { return nil }
        return Array(UnsafeBufferPointer(start: encoded, count: length))
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// A new key pair.
    package static func generate() throws(WebPushCryptoError) -> P256KeyAgreementKey {
        let key: OpaquePointer
        do throws(CredentialError) {
            key = try ECKeyGenerator.generateP256()
        } catch {
            throw .openSSLFailure(operation: "P-256 key generation", detail: error.description)
        }
        return try P256KeyAgreementKey(owning: key)
    }

    /// A key pair from its private scalar (32 bytes, big-endian) and its public point: the
    /// known-answer tests' keys, or a subscription's keys kept by the simulator. A public key
    /// that is not the private key's is refused.
    package convenience init(privateKey: [UInt8], publicKey: [UInt8]) throws(WebPushCryptoError) {
        guard privateKey.count == Self.privateKeyLength else { throw .invalidPrivateKey }
        try Self.checkEncoding(of: publicKey)
        let made = try Self.fromData(selection: pgpush_EVP_PKEY_KEYPAIR(), publicKey: publicKey, privateKey: privateKey)
        guard let check = EVP_PKEY_CTX_new_from_pkey(nil, made, nil) else {
            EVP_PKEY_free(made)
            throw .openSSL("EVP_PKEY_CTX_new_from_pkey")
        }
        defer { EVP_PKEY_CTX_free(check) }
        guard EVP_PKEY_pairwise_check(check) == 1 else {
            _ = CredentialError.takeOpenSSLErrors()
            EVP_PKEY_free(made)
            throw .invalidPrivateKey
        }
        try self.init(owning: made)
    }

    /// The private scalar, 32 bytes big-endian (for a subscription the simulator mints).
    package func privateKeyBytes() throws(WebPushCryptoError) -> [UInt8] {
        var scalar: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key, "priv", &scalar) == 1, let scalar else { throw .openSSL("EVP_PKEY_get_bn_param") }
        defer { BN_clear_free(scalar) }
        var bytes = [UInt8](repeating: 0, count: Self.privateKeyLength)
        guard BN_bn2binpad(scalar, &bytes, Int32(Self.privateKeyLength)) == Int32(Self.privateKeyLength) else {
            throw .openSSL("BN_bn2binpad")
        }
        return bytes
    }

    /// ECDH with `peerPublicKey` (uncompressed): the shared point's x coordinate, 32 bytes.
    package func sharedSecret(with peerPublicKey: [UInt8]) throws(WebPushCryptoError) -> [UInt8] {
        try Self.checkEncoding(of: peerPublicKey)
        let peer = try Self.fromData(selection: pgpush_EVP_PKEY_PUBLIC_KEY(), publicKey: peerPublicKey, privateKey: nil)
        defer { EVP_PKEY_free(peer) }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { throw .openSSL("EVP_PKEY_CTX_new_from_pkey") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_derive_init(context) == 1 else { throw .openSSL("EVP_PKEY_derive_init") }
        // No second validation of the peer: making `peer` from its octets already refused a
        // point off the curve (and the point at infinity has no uncompressed form), and on
        // P-256, whose cofactor is 1, every other point has the group's prime order. The full
        // check would multiply the point by that order: as much work again as the agreement.
        guard EVP_PKEY_derive_set_peer_ex(context, peer, 0) == 1 else {
            throw .invalidPublicKey("not a point on P-256 (\(CredentialError.takeOpenSSLErrors()))")
        }
        var secret = [UInt8](repeating: 0, count: 32)
        var length = secret.count
        guard EVP_PKEY_derive(context, &secret, &length) == 1, length == 32 else { throw .openSSL("EVP_PKEY_derive") }
        return secret
    }

    static func checkEncoding(of publicKey: [UInt8]) throws(WebPushCryptoError) {
        guard publicKey.count == publicKeyLength else {
            throw .invalidPublicKey("\(publicKey.count) bytes; an uncompressed point is 65")
        }
        guard publicKey[0] == 0x04 else { throw .invalidPublicKey("not an uncompressed point (first byte not 0x04)") }
    }

    /// An EVP_PKEY (owned by the caller) on P-256 from its public point and, for a key pair,
    /// its private scalar.
    static func fromData(selection: Int32, publicKey: [UInt8], privateKey: [UInt8]?) throws(WebPushCryptoError) -> OpaquePointer {
        // The builder keeps pointers to the names and values it is given until it makes the
        // parameters, so each lives in memory of its own until then.
        let names: [UnsafeMutablePointer<CChar>] = ["group", "prime256v1", "pub", "priv"].map { (name: String) in strdup(name)! }
        defer { names.forEach { free($0) } }
        let point = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: publicKey.count)
        defer { point.deallocate() }
        _ = point.initialize(from: publicKey)
        guard let builder = OSSL_PARAM_BLD_new() else { throw .openSSL("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        var scalar: OpaquePointer?
        defer { if let scalar { BN_clear_free(scalar) } }
        if let privateKey {
            scalar = BN_bin2bn(privateKey, Int32(privateKey.count), nil)
            guard let scalar, OSSL_PARAM_BLD_push_BN(builder, names[3], scalar) == 1 else { throw .openSSL("private key parameter") }
        }
        guard OSSL_PARAM_BLD_push_utf8_string(builder, names[0], names[1], 0) == 1,
              OSSL_PARAM_BLD_push_octet_string(builder, names[2], point.baseAddress, point.count) == 1,
              let parameters = OSSL_PARAM_BLD_to_param(builder)
        else { throw .openSSL("key parameters") }
        defer { OSSL_PARAM_free(parameters) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw .openSSL("EVP_PKEY_CTX_new_from_name") }
        defer { EVP_PKEY_CTX_free(context) }
        var made: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1,
              EVP_PKEY_fromdata(context, &made, selection, parameters) == 1, let made
        else {
            let detail = CredentialError.takeOpenSSLErrors()
            if privateKey == nil { throw .invalidPublicKey("not a point on P-256 (\(detail))") }
            throw .invalidPrivateKey
        }
        return made
    }
}
