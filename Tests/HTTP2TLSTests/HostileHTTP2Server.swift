import COpenSSL
import Foundation
import Glibc
@testable import HTTP2TLS
import Locking
import PGPushTestSupport

/// A TLS + HTTP/2 server that lies, for the attacks the nghttp2-based `HTTP2Server` will not
/// make: it speaks just enough HTTP/2 by hand (its SETTINGS, SETTINGS and PING ACKs, the
/// client's flow-control windows, which it respects like any server) and answers each
/// request with frames built here, as `attack` says at the moment the request arrives.
/// Blocking sockets, one thread per connection: a test tool, not a server.
///
/// `@unchecked Sendable`: the SSL_CTX is immutable after `init` (OpenSSL allows SSL_new from
/// any thread); the rest is constant or behind `state`'s lock.
final class HostileHTTP2Server: @unchecked Sendable {
    enum Attack: Sendable, Equatable {
        /// A small 200 answer, to show that new connections still work.
        case answer
        /// 200 HEADERS, then DATA as fast as the client's windows let it (which it refills
        /// as it reads) until the client resets the stream or `limit` bytes went out; then
        /// END_STREAM, so that a client that buffered it all sees an answer. With
        /// `ignoringReset` it goes on after the client's RST_STREAM too.
        case endlessBody(limit: Int, ignoringReset: Bool = false)
        /// HPACK amplification: one header block of `blockSize` bytes (HEADERS, then
        /// CONTINUATIONs of at most 16384 bytes): `:status: 200`, a literal with incremental
        /// indexing of a field `fieldSize` bytes long, then one-byte references to it, each
        /// decoding to the whole field again.
        case amplifiedHeaders(fieldSize: Int, blockSize: Int)
    }

    let port: Int
    private let listener: Int32
    private let tls: ServerTLSContext
    private let state = Locked(Shared())

    private struct Shared {
        var attack = Attack.answer
        var connections: Set<Int32> = []
        var connectionsAccepted = 0
        var bodyBytesSent = 0
        var resetsReceived = 0
        var stopped = false
    }

    var attack: Attack {
        get { state.withLock { $0.attack } }
        set { state.withLock { $0.attack = newValue } }
    }

    var connectionsAccepted: Int { state.withLock { $0.connectionsAccepted } }
    /// DATA payload bytes written for `endlessBody`, on every connection.
    var bodyBytesSent: Int { state.withLock { $0.bodyBytesSent } }
    var resetsReceived: Int { state.withLock { $0.resetsReceived } }

    init() throws {
        signal(SIGPIPE, SIG_IGN)  // the client may close while a frame is being written
        let certificates = try TestCertificates.get()
        // The project's own server context (TLS 1.2+, ALPN h2 only): the lies are in the frames.
        tls = try ServerTLSContext(certificate: .file(certificates.serverCertificate),
                                   privateKey: .file(certificates.serverKey), clientCertificates: .none)

        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard listening else {
            Glibc.close(fd)
            throw TestSetupError("cannot listen")
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Stops accepting and cuts every connection (their threads end on the failed I/O).
    func stop() {
        let open = state.withLock { shared -> Set<Int32> in
            shared.stopped = true
            return shared.connections
        }
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
        for fd in open { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                break
            }
            let accepted = state.withLock { shared -> Bool in
                guard !shared.stopped else { return false }
                shared.connections.insert(fd)
                shared.connectionsAccepted += 1
                return true
            }
            guard accepted else {
                Glibc.close(fd)
                break
            }
            Thread.detachNewThread { [self] in
                serve(fd)
                _ = state.withLock { $0.connections.remove(fd) }
                Glibc.close(fd)
            }
        }
        Glibc.close(listener)
    }

    // MARK: one connection

    private func serve(_ fd: Int32) {
        guard let ssl = SSL_new(tls.context) else { return }
        defer { SSL_free(ssl) }
        guard SSL_set_fd(ssl, fd) == 1, SSL_accept(ssl) == 1 else { return }
        let connection = Connection(ssl: ssl, fd: fd)
        // The client's preface, then this side's SETTINGS.
        guard let preface = connection.read(exactly: 24), preface == Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8),
              connection.write(frame(type: 0x4, flags: 0, stream: 0, payload: settingsPayload())) else { return }
        while !state.withLock({ $0.stopped }) {
            // Flooding: write DATA while the windows allow, looking for frames only when some wait.
            let flooding = connection.floodable
            guard connection.receive(waitMilliseconds: flooding == nil ? 100 : 0) else { return }
            for received in connection.takeFrames() {
                guard handle(received, on: connection) else { return }
            }
            if let streamID = connection.floodable, !flood(streamID, on: connection) { return }
        }
    }

    /// False when the connection should end.
    private func handle(_ received: Frame, on connection: Connection) -> Bool {
        switch received.type {
        case 0x1:  // HEADERS: a request (its block is small and in one frame)
            return answer(streamID: received.stream, on: connection)
        case 0x3:  // RST_STREAM
            state.withLock { $0.resetsReceived += 1 }
            if connection.flooding[received.stream]?.ignoringReset != true { connection.flooding[received.stream] = nil }
        case 0x4 where received.flags & 0x1 == 0:  // SETTINGS
            var offset = 0
            while offset + 6 <= received.payload.count {
                let id = Int(received.payload[offset]) << 8 | Int(received.payload[offset + 1])
                let value = received.payload[offset + 2..<offset + 6].reduce(0) { $0 << 8 | Int($1) }
                if id == 0x4 {  // SETTINGS_INITIAL_WINDOW_SIZE changes every stream's window
                    let delta = value - connection.initialStreamWindow
                    connection.initialStreamWindow = value
                    for key in connection.flooding.keys { connection.flooding[key]?.window += delta }
                }
                offset += 6
            }
            return connection.write(frame(type: 0x4, flags: 0x1, stream: 0, payload: []))
        case 0x6 where received.flags & 0x1 == 0:  // PING
            return connection.write(frame(type: 0x6, flags: 0x1, stream: 0, payload: received.payload))
        case 0x7:  // GOAWAY
            return false
        case 0x8:  // WINDOW_UPDATE
            guard received.payload.count == 4 else { return true }
            let increment = received.payload.reduce(0) { $0 << 8 | Int($1) } & 0x7fff_ffff
            if received.stream == 0 {
                connection.window += increment
            } else {
                connection.flooding[received.stream]?.window += increment
            }
        default:
            break
        }
        return true
    }

    private func answer(streamID: UInt32, on connection: Connection) -> Bool {
        // 0x88: the static table's ":status: 200".
        switch attack {
        case .answer:
            return connection.write(frame(type: 0x1, flags: 0x4, stream: streamID, payload: [0x88])
                                    + frame(type: 0x0, flags: 0x1, stream: streamID, payload: Array("ok".utf8)))
        case .endlessBody(let limit, let ignoringReset):
            connection.flooding[streamID] = Connection.Flood(window: connection.initialStreamWindow, remaining: limit,
                                                             ignoringReset: ignoringReset)
            return connection.write(frame(type: 0x1, flags: 0x4, stream: streamID, payload: [0x88]))
        case .amplifiedHeaders(let fieldSize, let blockSize):
            let name = Array("x-amplified".utf8)
            var block: [UInt8] = [0x88]
            block += hpackInteger(0, prefixBits: 6, flags: 0x40)  // literal, incremental indexing, new name
            block += hpackInteger(name.count, prefixBits: 7, flags: 0) + name
            block += hpackInteger(fieldSize - name.count, prefixBits: 7, flags: 0)
            block += [UInt8](repeating: UInt8(ascii: "a"), count: fieldSize - name.count)
            // 0xBE: index 62, the first dynamic-table entry, the field just added.
            block += [UInt8](repeating: 0xBE, count: max(blockSize - block.count, 0))
            var frames: [UInt8] = []
            var offset = 0
            while offset < block.count {
                let end = min(offset + 16_384, block.count)
                let first = offset == 0
                let flags: UInt8 = (first ? 0x1 : 0) | (end == block.count ? 0x4 : 0)  // END_STREAM on HEADERS, END_HEADERS last
                frames += frame(type: first ? 0x1 : 0x9, flags: flags, stream: streamID, payload: Array(block[offset..<end]))
                offset = end
            }
            return connection.write(frames)
        }
    }

    /// Writes one DATA frame on `streamID` as far as the windows allow; false when the
    /// connection failed.
    private func flood(_ streamID: UInt32, on connection: Connection) -> Bool {
        guard let current = connection.flooding[streamID] else { return true }
        let count = min(16_384, connection.window, current.window, current.remaining)
        let last = count == current.remaining
        connection.window -= count
        connection.flooding[streamID] = last ? nil : Connection.Flood(window: current.window - count, remaining: current.remaining - count,
                                                                      ignoringReset: current.ignoringReset)
        state.withLock { $0.bodyBytesSent += count }
        // Header and payload apart, the payload from one buffer: no allocation per frame, so
        // the test's memory figures are the client's (AddressSanitizer holds freed memory back).
        return connection.write(frame(type: 0x0, flags: last ? 0x1 : 0, stream: streamID, payload: [], length: count)[...])
            && connection.write(connection.filler[0..<count])
    }

    private func settingsPayload() -> [UInt8] {
        // SETTINGS_MAX_CONCURRENT_STREAMS 100.
        [0x00, 0x03, 0x00, 0x00, 0x00, 100]
    }
}

/// An HTTP/2 frame as read: header fields and payload.
private struct Frame {
    var type: UInt8
    var flags: UInt8
    var stream: UInt32
    var payload: [UInt8]
}

/// A frame: its header and `payload`; `length` for a header whose payload is written apart.
private func frame(type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8], length: Int? = nil) -> [UInt8] {
    let length = length ?? payload.count
    return [UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, flags,
            UInt8(stream >> 24 & 0x7f), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)] + payload
}

/// An HPACK integer (RFC 7541 §5.1) with an N-bit prefix, `flags` in the first byte's upper bits.
private func hpackInteger(_ value: Int, prefixBits: Int, flags: UInt8) -> [UInt8] {
    let maxPrefix = (1 << prefixBits) - 1
    guard value >= maxPrefix else { return [flags | UInt8(value)] }
    var bytes = [flags | UInt8(maxPrefix)]
    var rest = value - maxPrefix
    while rest >= 128 {
        bytes.append(UInt8(rest % 128 + 128))
        rest /= 128
    }
    bytes.append(UInt8(rest))
    return bytes
}

/// One connection's I/O and HTTP/2 bookkeeping, on its own thread only.
private final class Connection {
    struct Flood {
        var window: Int
        var remaining: Int
        var ignoringReset: Bool
    }

    let ssl: OpaquePointer
    let fd: Int32
    private var inbox: [UInt8] = []
    /// The client's connection-level receive window, as this side has used it.
    var window = 65_535
    var initialStreamWindow = 65_535
    /// Streams getting an endless body.
    var flooding: [UInt32: Flood] = [:]
    /// The payload of every DATA frame.
    let filler = [UInt8](repeating: UInt8(ascii: "x"), count: 16_384)
    private var readBuffer = [UInt8](repeating: 0, count: 16_384)

    init(ssl: OpaquePointer, fd: Int32) {
        self.ssl = ssl
        self.fd = fd
    }

    /// A stream that can take DATA now.
    var floodable: UInt32? {
        guard window > 0 else { return nil }
        return flooding.first { $0.value.window > 0 || $0.value.remaining == 0 }?.key
    }

    func write(_ bytes: [UInt8]) -> Bool {
        write(bytes[...])
    }

    func write(_ bytes: ArraySlice<UInt8>) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let written = bytes[offset...].withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
            guard written > 0 else { return false }
            offset += Int(written)
        }
        return true
    }

    /// Reads what arrives within `waitMilliseconds` (all that TLS has already decrypted, at
    /// least); false when the connection ended.
    func receive(waitMilliseconds: Int32) -> Bool {
        if SSL_pending(ssl) == 0 {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, waitMilliseconds)
            if ready == 0 { return true }
            if ready < 0 { return errno == EINTR }
        }
        let count = readBuffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
        guard count > 0 else { return false }
        inbox += readBuffer[0..<Int(count)]
        return true
    }

    func read(exactly count: Int) -> [UInt8]? {
        while inbox.count < count {
            guard receive(waitMilliseconds: 10_000) else { return nil }
        }
        defer { inbox.removeFirst(count) }
        return Array(inbox[0..<count])
    }

    /// The complete frames read so far.
    func takeFrames() -> [Frame] {
        var frames: [Frame] = []
        var offset = 0
        while inbox.count - offset >= 9 {
            let length = Int(inbox[offset]) << 16 | Int(inbox[offset + 1]) << 8 | Int(inbox[offset + 2])
            guard inbox.count - offset >= 9 + length else { break }
            let stream = inbox[offset + 5..<offset + 9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7fff_ffff
            frames.append(Frame(type: inbox[offset + 3], flags: inbox[offset + 4], stream: stream,
                                payload: Array(inbox[offset + 9..<offset + 9 + length])))
            offset += 9 + length
        }
        inbox.removeFirst(offset)
        return frames
    }
}
