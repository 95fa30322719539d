import COpenSSL
import Foundation

/// Reads a PEM private key of any type (APNs certificates come with RSA keys),
/// decrypting it when a password is given.
enum PrivateKeyReader {
    /// A new EVP_PKEY the caller owns.
    static func read(_ bytes: [UInt8], password: String?, source: String) throws(CredentialError) -> OpaquePointer {
        let encrypted = PEMCodec.containsEncryptedKey(bytes)
        if encrypted && password == nil {
            throw .encryptedPrivateKey(source: source)
        }
        let key = try PEMCodec.reading(bytes) { bio in
            guard encrypted, let password else {
                return PEM_read_bio_PrivateKey(bio, nil, PEMCodec.refusePassphrase, nil)
            }
            return password.withCString { passwordPointer in
                PEM_read_bio_PrivateKey(bio, nil, supplyPassphrase, UnsafeMutableRawPointer(mutating: passwordPointer))
            }
        }
        guard let key else {
            _ = CredentialError.takeOpenSSLErrors()
            throw encrypted ? .wrongPassword(source: source) : .notAPrivateKey(source: source)
        }
        return key
    }

    /// Copies the NUL-terminated password passed as user data into OpenSSL's buffer.
    private static let supplyPassphrase: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = {
        buffer, capacity, _, userData in
        guard let buffer, let userData else { return -1 }
        let password = userData.assumingMemoryBound(to: CChar.self)
        let length = strlen(password)
        guard length <= Int(capacity) else { return -1 }
        buffer.update(from: password, count: length)
        return Int32(length)
    }
}
