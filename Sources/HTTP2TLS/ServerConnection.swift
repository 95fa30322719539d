import CNGHTTP2
import COpenSSL
import Glibc

/// Everything server connections share on the I/O thread.
struct ServerEnvironment {
    let configuration: HTTP2ServerConfiguration
    let tls: ServerTLSContext
    let handler: any HTTP2ServerHandler
    let loop: EventLoop<ServerCommand>
    let counters: ServerCounters
    let liveObjects: LiveObjectCounter
    let callbacks: OpaquePointer
}

/// One request stream on the server, collecting the request and then serving the answer.
final class ServerStream {
    var method = ""
    var path = ""
    var authority: String?
    var headers: [HeaderField] = []
    var body: [UInt8] = []
    var response: [UInt8] = []
    var responseOffset = 0
    var answered = false
}

/// One accepted HTTP/2-over-TLS connection (or HTTP/1.1, when the configuration accepts it
/// and the client chose it); confined to the server's I/O thread.
final class ServerConnection {
    private enum Phase: Equatable {
        case handshaking, open
        /// Finished after GOAWAY: our side is half-closed, the peer's late frames are read and dropped.
        case lingering(until: UInt64)
        case closed
    }

    /// How long a finished connection keeps reading before it closes for good.
    static let lingerTime: Duration = .seconds(2)

    let id: Int
    private let environment: ServerEnvironment
    let tls: TLSStream
    private var session: OpaquePointer?
    private var phase = Phase.handshaking
    private var streams: [Int32: ServerStream] = [:]
    private var headerBlock = HeaderBlockBuilder()
    private let handshakeDeadline: UInt64
    private var peerSubject: String?
    private var announced = false
    /// Set instead of `session` on an HTTP/1.1 connection: reads its requests.
    private var http1: HTTP1Parser?
    private var http1NextStreamID: Int32 = 1
    /// HTTP/1.1 answers go out in the order their requests came.
    private var http1Order: [Int32] = []
    /// No more requests are read once this one is answered (`Connection: close`, GOAWAY).
    private var http1Closing = false

    var isClosed: Bool { phase == .closed }

    init(id: Int, tls: TLSStream, environment: ServerEnvironment) {
        self.id = id
        self.tls = tls
        self.environment = environment
        handshakeDeadline = MonotonicClock.now() &+ MonotonicClock.nanoseconds(environment.configuration.handshakeTimeout)
    }

    deinit {
        if let session {
            nghttp2_session_del(session)
            environment.liveObjects.http2Sessions.subtract(1, ordering: .relaxed)
        }
        tls.close()
    }

    var nextTimer: UInt64? {
        switch phase {
        case .handshaking: return handshakeDeadline
        case .lingering(let until): return until
        case .open, .closed: return nil
        }
    }

    func handleTimers(now: UInt64) {
        switch phase {
        case .handshaking where now >= handshakeDeadline: failHandshake()
        case .lingering(let until) where now >= until: close()
        default: break
        }
    }

    func handle(events: Int16, readBuffer: UnsafeMutableRawBufferPointer) {
        switch phase {
        case .handshaking: continueHandshake()
        case .open:
            if http1 != nil {
                guard receiveHTTP1(readBuffer) else { return }
                transmit()
                return
            }
            guard let session else { return }
            if events & Int16(POLLIN | POLLHUP | POLLERR) != 0 || tls.readWaitsForWritable,
               case .closed = HTTP2Wire.receive(session: session, tls: tls, buffer: readBuffer) {
                close()
                return
            }
            transmit()
        case .lingering:
            discardInput(readBuffer)
        case .closed: break
        }
    }

    /// Reads what the peer still sends after we finished, until it closes too.
    private func discardInput(_ buffer: UnsafeMutableRawBufferPointer) {
        while true {
            switch tls.read(into: buffer) {
            case .data: continue
            case .wouldBlock: return
            case .closed, .failed:
                close()
                return
            }
        }
    }

    private func continueHandshake() {
        switch tls.handshake() {
        case .inProgress: return
        case .failed: failHandshake()
        case .done:
            // The ALPN callback rejects clients offering other protocols; this catches clients offering none.
            let selected = ALPN.selected(by: tls.ssl)
            guard environment.configuration.protocols.accepts(selected) else {
                failHandshake()
                return
            }
            if selected == ALPN.http1 {
                http1 = HTTP1Parser(kind: .request, maxHeadBytes: 64 * 1024, maxBodyBytes: 1 << 20)
                phase = .open
                announce()
                return
            }
            var created: OpaquePointer?
            guard nghttp2_session_server_new(&created, environment.callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0,
                  let created else {
                close()
                return
            }
            session = created
            environment.liveObjects.http2Sessions.add(1, ordering: .relaxed)
            phase = .open
            var settings = [
                nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                       value: UInt32(clamping: environment.configuration.maxConcurrentStreams)),
                nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 24),
            ]
            _ = nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
            _ = nghttp2_session_set_local_window_size(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
            announce()
        }
    }

    /// The handshake is done: the handler hears of the connection, then what it sends.
    private func announce() {
        let certificate = tls.peerCertificate()
        peerSubject = certificate?.subject
        announced = true
        environment.counters.openConnections.add(1, ordering: .relaxed)
        environment.handler.connectionOpened(ServerConnectionInfo(
            id: id, peerAddress: Socket.peerAddress(tls.descriptor),
            peerCertificateSubject: certificate?.subject, peerCertificateDER: certificate?.der))
        transmit()
    }

    func transmit() {
        if http1 != nil { return transmitHTTP1() }
        guard phase == .open, let session else { return }
        if case .closed = HTTP2Wire.transmit(session: session, tls: tls) {
            close()
            return
        }
        if HTTP2Wire.isFinished(session: session, tls: tls) { linger() }
    }

    /// Closing at once while the client still writes would make the kernel answer with
    /// RST, which can discard the GOAWAY and answers the client has not read yet; so the
    /// connection half-closes and keeps reading for a moment, like a lingering close.
    private func linger() {
        tls.shutdownWrite()
        phase = .lingering(until: MonotonicClock.now() &+ MonotonicClock.nanoseconds(Self.lingerTime))
    }

    // MARK: commands

    func respond(streamID: Int32, _ response: ServerResponse) {
        if http1 != nil { return respondHTTP1(streamID: streamID, response) }
        guard let session, let stream = streams[streamID], !stream.answered else { return }
        stream.answered = true
        stream.response = response.body
        headerBlock.reset()
        headerBlock.add(":status", String(response.status))
        for field in response.headers { headerBlock.add(field.name, field.value, neverIndex: field.neverIndex) }
        var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: { _, streamID, buffer, length, flags, _, userData in
            guard let userData, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            return ServerSessionCallbacks.connection(userData).readResponse(streamID: streamID, into: buffer, length: length, flags: flags)
        })
        let hasBody = !response.body.isEmpty
        _ = headerBlock.withNameValues { nameValues, count in
            hasBody ? nghttp2_submit_response(session, streamID, nameValues, count, &provider)
                    : nghttp2_submit_response(session, streamID, nameValues, count, nil)
        }
    }

    func reset(streamID: Int32, errorCode: UInt32) {
        // HTTP/1.1 cannot refuse one request: the connection ends instead.
        if http1 != nil, streams[streamID] != nil { return close() }
        guard let session, let stream = streams[streamID], !stream.answered else { return }
        stream.answered = true
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode)
    }

    func goAway(lastStreamID: Int32?, errorCode: UInt32, debugData: [UInt8]) {
        if http1 != nil {
            http1Closing = true
            return transmitHTTP1()
        }
        guard let session else { return }
        let last = lastStreamID ?? nghttp2_session_get_last_proc_stream_id(session)
        _ = debugData.withUnsafeBufferPointer { data in
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, errorCode, data.baseAddress, data.count)
        }
    }

    func setMaxConcurrentStreams(_ value: Int) {
        guard let session else { return }
        var settings = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                               value: UInt32(clamping: value))]
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, 1)
    }

    // MARK: nghttp2 callbacks

    func beginHeaders(_ frame: UnsafePointer<nghttp2_frame>) {
        guard UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue,
              frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST else { return }
        streams[frame.pointee.hd.stream_id] = ServerStream()
        environment.counters.notePeak(streams.count)
    }

    func receivedHeader(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, flags: UInt8) {
        guard let stream = streams[streamID] else { return }
        let nameText = String(decoding: name, as: UTF8.self)
        let valueText = String(decoding: value, as: UTF8.self)
        switch nameText {
        case ":method": stream.method = valueText
        case ":path": stream.path = valueText
        case ":authority": stream.authority = valueText
        case ":scheme": break
        default:
            stream.headers.append(HeaderField(nameText, valueText,
                                              neverIndex: flags & UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) != 0))
        }
    }

    func receivedData(streamID: Int32, _ data: UnsafeBufferPointer<UInt8>) {
        streams[streamID]?.body.append(contentsOf: data)
    }

    func receivedFrame(_ frame: UnsafePointer<nghttp2_frame>) {
        let header = frame.pointee.hd
        let type = UInt32(header.type)
        guard type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue,
              header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0,
              let stream = streams[header.stream_id] else { return }
        environment.counters.requestsReceived.add(1, ordering: .relaxed)
        let request = ServerRequest(connectionID: id, streamID: header.stream_id, method: stream.method, path: stream.path,
                                    authority: stream.authority, headers: stream.headers, body: stream.body,
                                    peerCertificateSubject: peerSubject, arrivalNanoseconds: tls.arrivalNanoseconds)
        environment.handler.handle(request, responder: ServerResponder(connectionID: id, streamID: header.stream_id,
                                                                        loop: environment.loop))
    }

    func streamClosed(streamID: Int32) {
        streams[streamID] = nil
    }

    func readResponse(streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let stream = streams[streamID] else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        let count = min(length, stream.response.count - stream.responseOffset)
        stream.response.withUnsafeBufferPointer { source in
            buffer.update(from: source.baseAddress! + stream.responseOffset, count: count)
        }
        stream.responseOffset += count
        if stream.responseOffset == stream.response.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }

    private func failHandshake() {
        environment.counters.handshakeFailures.add(1, ordering: .relaxed)
        close()
    }

    // MARK: HTTP/1.1

    /// Reads requests and hands each complete one to the handler. False once closed.
    private func receiveHTTP1(_ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        while true {
            switch tls.read(into: buffer) {
            case .data(let count):
                guard !http1Closing else { continue }
                http1?.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                while true {
                    let message: HTTP1Message?
                    do {
                        message = try http1?.next()
                    } catch {
                        close()
                        return false
                    }
                    guard let message else { break }
                    handleHTTP1(message)
                }
            case .wouldBlock:
                return true
            case .closed, .failed:
                close()
                return false
            }
        }
    }

    private func handleHTTP1(_ message: HTTP1Message) {
        let streamID = http1NextStreamID
        http1NextStreamID += 2
        let stream = ServerStream()
        stream.method = message.method
        stream.path = message.target
        stream.authority = message.value(of: "host")
        stream.headers = message.fields.filter { $0.name != "host" && $0.name != "content-length" && $0.name != "connection" }
            .map { HeaderField($0.name, $0.value) }
        stream.body = message.body
        streams[streamID] = stream
        http1Order.append(streamID)
        if message.closes { http1Closing = true }
        environment.counters.notePeak(streams.count)
        environment.counters.requestsReceived.add(1, ordering: .relaxed)
        let request = ServerRequest(connectionID: id, streamID: streamID, method: stream.method, path: stream.path,
                                    authority: stream.authority, headers: stream.headers, body: stream.body,
                                    peerCertificateSubject: peerSubject, arrivalNanoseconds: tls.arrivalNanoseconds)
        environment.handler.handle(request, responder: ServerResponder(connectionID: id, streamID: streamID, loop: environment.loop))
    }

    private func respondHTTP1(streamID: Int32, _ response: ServerResponse) {
        guard let stream = streams[streamID], !stream.answered else { return }
        stream.answered = true
        let last = http1Closing && http1Order.last == streamID
        stream.response = (try? HTTP1.response(status: response.status, headers: response.headers, body: response.body,
                                               close: last)) ?? Array("HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n".utf8)
        // In order: an answer waits for those of the requests before it.
        while let first = http1Order.first, let ready = streams[first], ready.answered {
            ready.response.withUnsafeBufferPointer { tls.append($0.baseAddress!, count: $0.count) }
            streams[first] = nil
            http1Order.removeFirst()
        }
    }

    private func transmitHTTP1() {
        guard phase == .open else { return }
        if tls.hasPendingOutput, case .failed = tls.flush() {
            close()
            return
        }
        if http1Closing && http1Order.isEmpty && !tls.hasPendingOutput { linger() }
    }

    /// Drops the connection at once (no GOAWAY).
    func close() {
        guard phase != .closed else { return }
        phase = .closed
        streams.removeAll()
        http1 = nil
        if let session {
            nghttp2_session_del(session)
            environment.liveObjects.http2Sessions.subtract(1, ordering: .relaxed)
            self.session = nil
        }
        tls.close()
        if announced {
            environment.counters.openConnections.subtract(1, ordering: .relaxed)
            environment.handler.connectionClosed(id)
        }
    }
}
