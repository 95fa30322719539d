import COpenSSL
import CShims
import Glibc
import PushCrypto

/// A non-blocking socket with an OpenSSL session on it, plus the outgoing bytes not yet
/// accepted by SSL_write. Thread-confined to the I/O thread; closes both in `close()`.
final class TLSStream {
    enum Step { case done, inProgress, failed(String) }
    enum ReadResult { case data(Int), wouldBlock, closed, failed(String) }

    let descriptor: Int32
    let ssl: OpaquePointer
    private let counter: LiveObjectCounter
    private var output: [UInt8] = []
    private var outputStart = 0
    /// The last SSL call asked for the socket to become writable / readable.
    private(set) var wantsWritable = false
    /// SSL_read stopped because TLS had to write first (e.g. a TLS 1.3 key update): retry
    /// the read once the socket is writable, since no further POLLIN may come for it.
    private(set) var readWaitsForWritable = false
    private var isClosed = false
    /// With `timesReads`, reads go through a BIO that keeps the kernel's receive time of
    /// what it read (`arrivalNanoseconds`): the simulator stamps requests with it, a capped
    /// client its answers. Owned here, freed after the SSL session that reads into it.
    private let receiveClock: UnsafeMutablePointer<cshims_timed_socket>?

    /// Takes ownership of `descriptor` (already counted as a live socket) on success.
    init?(descriptor: Int32, context: OpaquePointer, isServer: Bool, timesReads: Bool, counter: LiveObjectCounter) {
        guard let ssl = SSL_new(context) else { return nil }
        guard SSL_set_fd(ssl, descriptor) == 1 else {
            SSL_free(ssl)
            return nil
        }
        receiveClock = timesReads ? Self.timeReads(of: ssl, descriptor: descriptor) : nil
        if isServer { SSL_set_accept_state(ssl) } else { SSL_set_connect_state(ssl) }
        self.descriptor = descriptor
        self.ssl = ssl
        self.counter = counter
        counter.tlsSessions.add(1, ordering: .relaxed)
        output.reserveCapacity(Self.batchSize + 16_384)
    }

    /// Replaces the session's read BIO with one that records receive times; nil (plain
    /// reads, no times) when the kernel or OpenSSL will not.
    private static func timeReads(of ssl: OpaquePointer, descriptor: Int32) -> UnsafeMutablePointer<cshims_timed_socket>? {
        guard cshims_enable_receive_timestamps(descriptor) == 0 else { return nil }
        let clock = UnsafeMutablePointer<cshims_timed_socket>.allocate(capacity: 1)
        clock.initialize(to: cshims_timed_socket(fd: descriptor, last_arrival_ns: 0))
        guard let bio = cshims_timed_socket_read_bio(clock) else {
            clock.deallocate()
            return nil
        }
        SSL_set0_rbio(ssl, bio)
        return clock
    }

    /// When the kernel received the last bytes read (CLOCK_REALTIME nanoseconds); nil
    /// without `timesReads`, or before any time was given.
    var arrivalNanoseconds: UInt64? {
        guard let clock = receiveClock, clock.pointee.last_arrival_ns > 0 else { return nil }
        return UInt64(clock.pointee.last_arrival_ns)
    }

    /// How many bytes of HTTP/2 output are gathered for one SSL_write.
    static let batchSize = 65_536

    var pendingOutputCount: Int { output.count - outputStart }
    var hasPendingOutput: Bool { outputStart < output.count }

    var pollEvents: Int16 {
        Int16(POLLIN) | (wantsWritable || hasPendingOutput ? Int16(POLLOUT) : 0)
    }

    func handshake() -> Step {
        ERR_clear_error()
        let status = SSL_do_handshake(ssl)
        if status == 1 {
            wantsWritable = false
            return .done
        }
        switch SSL_get_error(ssl, status) {
        case SSL_ERROR_WANT_READ:
            wantsWritable = false
            return .inProgress
        case SSL_ERROR_WANT_WRITE:
            wantsWritable = true
            return .inProgress
        default:
            let verify = SSL_get_verify_result(ssl)
            var detail = OpenSSLErrors.drain()
            if verify != X509_V_OK, let text = X509_verify_cert_error_string(verify) {
                detail = "certificate verify failed: \(String(cString: text))" + (detail.isEmpty ? "" : " (\(detail))")
            }
            if detail.isEmpty { detail = errno != 0 ? Socket.errorText() : "connection closed during handshake" }
            return .failed(detail)
        }
    }

    /// After a failed client handshake: why the server's certificate did not verify, and
    /// what it was; nil when verification was not what failed. The session keeps the chain
    /// the server sent (its first entry the server's own certificate) even when it refused it.
    func certificateRejection() -> CertificateRejection? {
        let verify = SSL_get_verify_result(ssl)
        guard verify != X509_V_OK else { return nil }
        let reason = X509_verify_cert_error_string(verify).map { String(cString: $0) } ?? "verify error \(verify)"
        var certificate: CertificateRejection.Certificate?
        if let chain = SSL_get_peer_cert_chain(ssl), OPENSSL_sk_num(chain) > 0,
           let leaf = OPENSSL_sk_value(chain, 0),
           let details = try? CertificateDetails(of: OpaquePointer(leaf), source: "server certificate") {
            certificate = .init(subject: details.subject, notBefore: details.notBefore, notAfter: details.notAfter)
        }
        ERR_clear_error()
        return CertificateRejection(verifyResult: Int(verify), reason: reason, certificate: certificate)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        readWaitsForWritable = false
        ERR_clear_error()
        let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        if count > 0 { return .data(Int(count)) }
        switch SSL_get_error(ssl, count) {
        case SSL_ERROR_WANT_READ: return .wouldBlock
        case SSL_ERROR_WANT_WRITE:
            wantsWritable = true
            readWaitsForWritable = true
            return .wouldBlock
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL:
            let code = errno
            let queued = OpenSSLErrors.drain()
            if code == 0 && queued.isEmpty { return .closed }
            return .failed(queued.isEmpty ? Socket.errorText(code) : queued)
        default:
            return .failed(OpenSSLErrors.describe("SSL_read"))
        }
    }

    func append(_ bytes: UnsafePointer<UInt8>, count: Int) {
        output.append(contentsOf: UnsafeBufferPointer(start: bytes, count: count))
    }

    /// Writes pending output until done or the socket is full.
    func flush() -> Step {
        wantsWritable = false
        while outputStart < output.count {
            ERR_clear_error()
            let written = output.withUnsafeBytes { raw in
                SSL_write(ssl, raw.baseAddress! + outputStart, Int32(output.count - outputStart))
            }
            if written > 0 {
                outputStart += Int(written)
                continue
            }
            switch SSL_get_error(ssl, written) {
            case SSL_ERROR_WANT_WRITE:
                wantsWritable = true
                return .inProgress
            case SSL_ERROR_WANT_READ:
                return .inProgress
            case SSL_ERROR_SYSCALL:
                let queued = OpenSSLErrors.drain()
                return .failed(queued.isEmpty ? Socket.errorText() : queued)
            default:
                return .failed(OpenSSLErrors.describe("SSL_write"))
            }
        }
        output.removeAll(keepingCapacity: true)
        outputStart = 0
        return .done
    }

    /// Subject (RFC 2253) and DER of the peer's certificate, if it sent one.
    func peerCertificate() -> (subject: String, der: [UInt8])? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        var subject = ""
        if let name = X509_get_subject_name(certificate), let bio = BIO_new(BIO_s_mem()) {
            defer { BIO_free(bio) }
            if X509_NAME_print_ex(bio, name, 0, pgpush_XN_FLAG_RFC2253()) >= 0 {
                var data: UnsafeMutablePointer<CChar>?
                let length = pgpush_BIO_get_mem_data(bio, &data)
                if let data, length > 0 {
                    subject = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
                }
            }
        }
        var der: [UInt8] = []
        var buffer: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(certificate, &buffer)
        if length > 0, let buffer {
            der = Array(UnsafeBufferPointer(start: buffer, count: Int(length)))
            pgpush_OPENSSL_free(buffer)
        }
        return (subject, der)
    }

    /// Sends close_notify and half-closes the socket: the peer reads everything sent so far
    /// and then the end, while this side can still read (and discard) what the peer sends.
    func shutdownWrite() {
        guard !isClosed else { return }
        ERR_clear_error()
        if SSL_is_init_finished(ssl) == 1 { _ = SSL_shutdown(ssl) }
        ERR_clear_error()
        _ = Glibc.shutdown(descriptor, Int32(SHUT_WR))
    }

    /// Sends close_notify if possible and releases the session and the socket.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        ERR_clear_error()
        if SSL_is_init_finished(ssl) == 1 { _ = SSL_shutdown(ssl) }
        ERR_clear_error()
        SSL_free(ssl)
        receiveClock?.deallocate()
        Glibc.close(descriptor)
        counter.tlsSessions.subtract(1, ordering: .relaxed)
        counter.sockets.subtract(1, ordering: .relaxed)
    }

    deinit { close() }
}
