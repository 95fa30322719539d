import CShims

/// This thread's OpenSSL error queue as text. The queue is per thread and shared by
/// the credential code and the TLS layer: whoever reads it empties it, so a stale
/// entry never ends up attached to a later, unrelated failure.
package enum OpenSSLErrors {
    /// Drains this thread's OpenSSL error queue into one line ("" when it is empty).
    package static func drain() -> String {
        var buffer = [CChar](repeating: 0, count: 1024)
        let length = cshims_openssl_error_string(&buffer, buffer.count)
        return length == 0 ? "" : String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    package static func describe(_ context: String) -> String {
        let queued = drain()
        return queued.isEmpty ? context : "\(context): \(queued)"
    }
}
