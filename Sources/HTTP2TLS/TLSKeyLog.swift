import COpenSSL
import Glibc

/// The TLS secrets of every connection made with one client context, appended to a file in
/// the NSS key log format that Wireshark and tshark read (the format curl, Firefox and Go
/// write when `SSLKEYLOGFILE` is set). With it an operator can read pgpush's APNs traffic
/// in a capture; without it nobody can, which is why it exists only when asked for.
///
/// Each line goes out in one `write(2)` on a descriptor opened with `O_APPEND`, so several
/// contexts or processes can share one file without interleaving lines. The file is created
/// readable by its owner only.
package final class TLSKeyLog: Sendable {
    package let path: String
    private let descriptor: Int32

    package init(path: String) throws(TLSConfigurationError) {
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .keyLog("cannot open \"\(path)\" for appending: \(String(cString: strerror(errno)))")
        }
        self.path = path
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Appends one line (OpenSSL hands it without its newline). A failed write is dropped:
    /// a debugging aid must never stop a connection.
    func append(_ line: UnsafePointer<CChar>) {
        let length = strlen(line)
        var record = [UInt8](repeating: 0x0A, count: length + 1)
        record.withUnsafeMutableBytes { bytes in
            bytes.baseAddress!.copyMemory(from: line, byteCount: length)
        }
        _ = record.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }

    /// Makes `context` hand every secret it derives to this log. The context's slot 0 of
    /// application data points at the log, unretained: the `ClientTLSContext` that owns
    /// both keeps the log alive as long as the SSL_CTX.
    func install(into context: OpaquePointer) {
        _ = SSL_CTX_set_ex_data(context, 0, Unmanaged.passUnretained(self).toOpaque())
        SSL_CTX_set_keylog_callback(context) { ssl, line in
            guard let ssl, let line, let context = SSL_get_SSL_CTX(ssl),
                  let log = SSL_CTX_get_ex_data(context, 0) else { return }
            Unmanaged<TLSKeyLog>.fromOpaque(log).takeUnretainedValue().append(line)
        }
    }
}
