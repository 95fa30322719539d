import COpenSSL

/// A Web Push message's encryption (RFC 8291) in the aes128gcm content coding (RFC 8188): the
/// body a push service relays to one browser, which only that browser's subscription keys open.
///
/// Every message gets a new sender key pair and a new salt. Key agreement (ECDH, P-256) between
/// the sender key and the subscription's `p256dh` key, mixed with the subscription's `auth`
/// secret and both public keys, gives the input key; the salt turns it into the content key and
/// nonce of one AES-128-GCM record. The body is a header (salt, record size, the sender's public
/// key) and that single record: the plaintext, the last-record delimiter 0x02, the tag.
package enum WebPushEncryption {
    /// The record size written in the header: what push services are obliged to accept
    /// (RFC 8291 §4), and what browsers' decrypters read.
    package static let recordSize = 4096
    /// Salt, record size, key id length, the sender's public key as key id.
    static let headerLength = 16 + 4 + 1 + P256KeyAgreementKey.publicKeyLength
    static let saltLength = 16
    static let authSecretLength = 16
    /// The last (here: only) record's delimiter (RFC 8188 §2).
    static let lastRecordDelimiter: UInt8 = 0x02
    /// The most plaintext one message carries: the 4,096-byte body less header, delimiter and
    /// tag (3,993 bytes).
    package static let largestPlaintext = recordSize - headerLength - 1 - AES128GCM.tagLength

    /// `plaintext` sealed for the subscription whose keys are `p256dh` (65 bytes) and `auth`
    /// (16 bytes), with a fresh sender key and salt.
    package static func seal(_ plaintext: [UInt8], p256dh: [UInt8], auth: [UInt8]) throws(WebPushCryptoError) -> [UInt8] {
        var salt = [UInt8](repeating: 0, count: saltLength)
        guard RAND_bytes(&salt, Int32(saltLength)) == 1 else { throw .openSSL("RAND_bytes") }
        return try seal(plaintext, p256dh: p256dh, auth: auth, senderKey: P256KeyAgreementKey.generate(), salt: salt)
    }

    /// The same with the sender key and salt given: for known-answer tests only (a sender key
    /// or salt used twice would let the two messages be read together).
    package static func seal(_ plaintext: [UInt8], p256dh: [UInt8], auth: [UInt8], senderKey: P256KeyAgreementKey,
                             salt: [UInt8]) throws(WebPushCryptoError) -> [UInt8] {
        guard plaintext.count <= largestPlaintext else {
            throw .plaintextTooLarge(length: plaintext.count, limit: largestPlaintext)
        }
        guard auth.count == authSecretLength else { throw .invalidAuthSecret(length: auth.count) }
        precondition(salt.count == saltLength)
        let secret = try senderKey.sharedSecret(with: p256dh)
        let (key, nonce) = try contentKeyAndNonce(sharedSecret: secret, auth: auth, recipientPublicKey: p256dh,
                                                  senderPublicKey: senderKey.publicKey, salt: salt)
        var body = salt
        body.reserveCapacity(headerLength + plaintext.count + 1 + AES128GCM.tagLength)
        body += withUnsafeBytes(of: UInt32(recordSize).bigEndian, Array.init)
        body.append(UInt8(P256KeyAgreementKey.publicKeyLength))
        body += senderKey.publicKey
        body += try AES128GCM.seal(plaintext + [lastRecordDelimiter], key: key, nonce: nonce)
        return body
    }

    /// The plaintext of `body`, opened with the subscription's key pair and `auth` secret (the
    /// simulator's side, and tests). Refuses anything but one aes128gcm record whose delimiter
    /// says it is the last.
    package static func open(_ body: [UInt8], recipient: P256KeyAgreementKey, auth: [UInt8]) throws(WebPushCryptoError) -> [UInt8] {
        guard auth.count == authSecretLength else { throw .invalidAuthSecret(length: auth.count) }
        guard body.count >= 16 + 4 + 1 else { throw .malformedBody("\(body.count) bytes, shorter than a header") }
        let salt = Array(body[0..<16])
        let size = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let keyIDLength = Int(body[20])
        guard keyIDLength == P256KeyAgreementKey.publicKeyLength else {
            throw .malformedBody("a key id of \(keyIDLength) bytes; Web Push's is the sender's 65-byte public key")
        }
        guard body.count >= headerLength + 1 + AES128GCM.tagLength else {
            throw .malformedBody("\(body.count) bytes, too short for a header and a record")
        }
        let record = body[headerLength...]
        guard size >= 18, record.count <= size else {
            throw .malformedBody("a \(record.count)-byte record with record size \(size): Web Push sends exactly one")
        }
        let senderPublicKey = Array(body[21..<headerLength])
        let secret = try recipient.sharedSecret(with: senderPublicKey)
        let (key, nonce) = try contentKeyAndNonce(sharedSecret: secret, auth: auth, recipientPublicKey: recipient.publicKey,
                                                  senderPublicKey: senderPublicKey, salt: salt)
        let padded = try AES128GCM.open(record, key: key, nonce: nonce)
        // Padding is zeros after the delimiter.
        guard let delimiter = padded.lastIndex(where: { $0 != 0 }), padded[delimiter] == lastRecordDelimiter else {
            throw .malformedBody("the record does not end with the last record's delimiter (0x02)")
        }
        return Array(padded[..<delimiter])
    }

    /// RFC 8291 §3.3-3.4 (the input key from the shared secret, `auth` and both public keys)
    /// and RFC 8188 §2.2-2.3 (the content key and nonce from it and the salt), as HKDF-SHA-256
    /// steps whose output fits one HMAC block each.
    private static func contentKeyAndNonce(sharedSecret: [UInt8], auth: [UInt8], recipientPublicKey: [UInt8],
                                           senderPublicKey: [UInt8], salt: [UInt8]) throws(WebPushCryptoError) -> (key: [UInt8], nonce: [UInt8]) {
        let authPRK = try HMACSHA256.code(key: auth, data: sharedSecret)
        let keyInfo = Array("WebPush: info".utf8) + [0] + recipientPublicKey + senderPublicKey
        let inputKey = try HMACSHA256.code(key: authPRK, data: keyInfo + [1])
        let prk = try HMACSHA256.code(key: salt, data: inputKey)
        let key = try HMACSHA256.code(key: prk, data: Array("Content-Encoding: aes128gcm".utf8) + [0, 1])
        let nonce = try HMACSHA256.code(key: prk, data: Array("Content-Encoding: nonce".utf8) + [0, 1])
        return (Array(key.prefix(AES128GCM.keyLength)), Array(nonce.prefix(AES128GCM.nonceLength)))
    }
}
