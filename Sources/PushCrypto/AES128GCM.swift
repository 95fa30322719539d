import COpenSSL

/// AES-128-GCM with a 12-byte nonce, no additional data and a 16-byte tag appended to the
/// ciphertext: RFC 8188's record cipher.
enum AES128GCM {
    static let keyLength = 16
    static let nonceLength = 12
    static let tagLength = 16

    /// `plaintext` encrypted, followed by its tag.
    static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) throws(WebPushCryptoError) -> [UInt8] {
        precondition(key.count == keyLength && nonce.count == nonceLength)
        guard let context = EVP_CIPHER_CTX_new() else { throw .openSSL("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var written: Int32 = 0, final: Int32 = 0
        let sealed = output.withUnsafeMutableBufferPointer { out -> Bool in
            guard EVP_EncryptInit_ex2(context, EVP_aes_128_gcm(), key, nonce, nil) == 1,
                  EVP_EncryptUpdate(context, out.baseAddress, &written, plaintext, Int32(plaintext.count)) == 1,
                  EVP_EncryptFinal_ex(context, out.baseAddress! + Int(written), &final) == 1
            else { return false }
            return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagLength),
                                       out.baseAddress! + plaintext.count) == 1
        }
        guard sealed, Int(written + final) == plaintext.count else { throw .openSSL("AES-128-GCM encryption") }
        return output
    }

    /// The plaintext of `sealed` (ciphertext ‖ tag), or `authenticationFailed` when the tag
    /// does not match: another key, or altered bytes.
    static func open(_ sealed: ArraySlice<UInt8>, key: [UInt8], nonce: [UInt8]) throws(WebPushCryptoError) -> [UInt8] {
        precondition(key.count == keyLength && nonce.count == nonceLength)
        guard sealed.count >= tagLength else { throw .malformedBody("a record is shorter than its 16-byte tag") }
        guard let context = EVP_CIPHER_CTX_new() else { throw .openSSL("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }
        let cipherLength = sealed.count - tagLength
        var tag = Array(sealed.suffix(tagLength))
        let ciphertext = Array(sealed.prefix(cipherLength))
        var output = [UInt8](repeating: 0, count: max(cipherLength, 1))
        var written: Int32 = 0, final: Int32 = 0
        guard EVP_DecryptInit_ex2(context, EVP_aes_128_gcm(), key, nonce, nil) == 1,
              EVP_DecryptUpdate(context, &output, &written, ciphertext, Int32(cipherLength)) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1
        else { throw .openSSL("AES-128-GCM decryption") }
        let opened = output.withUnsafeMutableBufferPointer { out in
            EVP_DecryptFinal_ex(context, out.baseAddress! + Int(written), &final)
        }
        guard opened == 1 else {
            _ = CredentialError.takeOpenSSLErrors()
            throw .authenticationFailed
        }
        return Array(output.prefix(Int(written + final)))
    }
}
