import COpenSSL

/// Moves PEM/DER bytes in and out of OpenSSL through memory BIOs.
enum PEMCodec {
    /// Runs `body` with a read-only BIO over `bytes`; the BIO does not outlive the call.
    static func reading<Result>(
        _ bytes: [UInt8], _ body: (OpaquePointer) throws(CredentialError) -> Result
    ) throws(CredentialError) -> Result {
        let outcome = bytes.withUnsafeBytes { buffer in
            Swift.Result { () throws(CredentialError) -> Result in
                guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else {
                    throw CredentialError.openSSL("BIO_new_mem_buf")
                }
                defer { BIO_free(bio) }
                return try body(bio)
            }
        }
        return try outcome.get()
    }

    /// The text that `write` puts into a fresh memory BIO; `write` returns false on failure.
    static func writing(_ operation: String, _ write: (OpaquePointer) -> Bool) throws(CredentialError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CredentialError.openSSL("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) else { throw CredentialError.openSSL(operation) }
        var data: UnsafeMutablePointer<CChar>?
        let length = pgpush_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { return "" }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    /// True when PEM text carries an encrypted key (PKCS#8 or legacy OpenSSL form).
    static func containsEncryptedKey(_ bytes: [UInt8]) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        return text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED")
    }

    /// OpenSSL's PEM readers ask for a passphrase through a callback and, without
    /// one, prompt on the terminal. A worker must fail instead, so this one refuses.
    static let refusePassphrase: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = { _, _, _, _ in
        -1
    }
}
