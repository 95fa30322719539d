/// Why a Web Push message could not be sealed or opened. The texts name lengths and
/// formats, never key or message bytes.
package enum WebPushCryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A subscription's `p256dh` is not an uncompressed P-256 point (65 bytes, 0x04 first, on the curve).
    case invalidPublicKey(String)
    /// A subscription's `auth` secret is not 16 bytes.
    case invalidAuthSecret(length: Int)
    /// A private key given as bytes is not a P-256 scalar, or not the public key's.
    case invalidPrivateKey
    /// More plaintext than one record of `recordSize` holds.
    case plaintextTooLarge(length: Int, limit: Int)
    /// A body that is not one aes128gcm record for this key (header, sizes, delimiter).
    case malformedBody(String)
    /// The record does not open with the derived key: another subscription's, or altered.
    case authenticationFailed
    case openSSLFailure(operation: String, detail: String)

    package var description: String {
        switch self {
        case .invalidPublicKey(let why):
            return "the subscription's p256dh key is not a P-256 public key: \(why)"
        case .invalidAuthSecret(let length):
            return "the subscription's auth secret is \(length) bytes; it must be 16"
        case .invalidPrivateKey:
            return "not a P-256 private key matching its public key"
        case .plaintextTooLarge(let length, let limit):
            return "the payload is \(length) bytes; one Web Push record holds at most \(limit)"
        case .malformedBody(let why):
            return "not an aes128gcm Web Push body: \(why)"
        case .authenticationFailed:
            return "the message does not open with this subscription's keys"
        case .openSSLFailure(let operation, let detail):
            return "\(operation) failed: \(detail)"
        }
    }

    static func openSSL(_ operation: String) -> WebPushCryptoError {
        .openSSLFailure(operation: operation, detail: CredentialError.takeOpenSSLErrors())
    }
}
