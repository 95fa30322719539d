import COpenSSL

/// HMAC-SHA-256 (RFC 2104), the one primitive behind HKDF's extract and expand steps.
package enum HMACSHA256 {
    package static let length = 32

    package static func code(key: [UInt8], data: [UInt8]) throws(WebPushCryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: length)
        var written: UInt32 = 0
        let made = key.withUnsafeBufferPointer { key in
            data.withUnsafeBufferPointer { data in
                output.withUnsafeMutableBufferPointer { out in
                    HMAC(EVP_sha256(), key.baseAddress, Int32(key.count), data.baseAddress, data.count,
                         out.baseAddress, &written)
                }
            }
        }
        guard made != nil, written == length else { throw .openSSL("HMAC-SHA-256") }
        return output
    }
}
