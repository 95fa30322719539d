import CNGHTTP2
import COpenSSL
import Glibc

/// One client HTTP/2-over-TLS connection. Thread-confined to the I/O thread: it owns the
/// socket, the SSL* and the nghttp2_session* and is never touched from elsewhere.
final class ClientConnection {
    private enum Phase {
        case connecting(addressIndex: Int)
        case handshaking
        case open
        case closed
    }

    let id: Int
    private let setup: ConnectionSetup
    private var configuration: HTTP2ClientConfiguration { setup.configuration }
    private let counter: LiveObjectCounter
    private let callbacks: OpaquePointer
    private var phase: Phase = .connecting(addressIndex: 0)
    private var descriptor: Int32 = -1
    private(set) var tls: TLSStream?
    private var session: OpaquePointer?
    private var connectPending = true
    private var connectError: ConnectError?

    private var streams: [Int32: ClientStream] = [:]
    private var queue: [PendingRequest?] = []
    private var queueHead = 0
    private var headerBlock = HeaderBlockBuilder()

    private var settingsReceived = false
    private var answeredOnce = false
    private var peerMaxConcurrentStreams = 1
    private var goAway: GoAway?
    private var drainingLocally = false
    private var needsSubmit = false
    /// The per-connection rate cap, if configured, and when it next lets a request go.
    private var submitWindow: SubmitWindow?
    private var rateTimer: UInt64?

    private let connectDeadline: UInt64
    private let defaultAuthority: String
    private var earliestDeadline: UInt64 = .max
    private var lastReceive: UInt64
    private var pingSentAt: UInt64?

    var isClosed: Bool { if case .closed = phase { return true } else { return false } }

    init(setup: ConnectionSetup, callbacks: OpaquePointer, counter: LiveObjectCounter) {
        self.id = setup.id
        self.setup = setup
        self.callbacks = callbacks
        self.counter = counter
        defaultAuthority = setup.port == 443 ? setup.host : "\(setup.host):\(setup.port)"
        let now = MonotonicClock.now()
        connectDeadline = now &+ MonotonicClock.nanoseconds(setup.configuration.connectTimeout)
        lastReceive = now
        submitWindow = setup.configuration.maxRequestsPerSecond.map(SubmitWindow.init(limit:))
        startConnect(from: 0)
    }

    deinit {
        if let session {
            nghttp2_session_del(session)
            counter.http2Sessions.subtract(1, ordering: .relaxed)
        }
        if let tls {
            tls.close()
        } else if descriptor >= 0 {
            Glibc.close(descriptor)
            counter.sockets.subtract(1, ordering: .relaxed)
        }
    }

    // MARK: connecting

    private func startConnect(from index: Int) {
        var lastError = ConnectError.connectFailed("no address")
        var next = index
        while next < setup.addresses.count {
            switch Socket.startConnect(to: setup.addresses[next]) {
            case .success(let fd):
                counter.sockets.add(1, ordering: .relaxed)
                descriptor = fd
                phase = .connecting(addressIndex: next)
                return
            case .failure(let error):
                lastError = error
                next += 1
            }
        }
        failConnect(lastError)
    }

    private func finishTCPConnect(addressIndex: Int) {
        let code = Socket.pendingError(descriptor)
        guard code == 0 else {
            Glibc.close(descriptor)
            counter.sockets.subtract(1, ordering: .relaxed)
            descriptor = -1
            if addressIndex + 1 < setup.addresses.count {
                startConnect(from: addressIndex + 1)
            } else {
                failConnect(.connectFailed("\(setup.addresses[addressIndex]): \(Socket.errorText(code))"))
            }
            return
        }
        guard let stream = TLSStream(descriptor: descriptor, context: configuration.tls.context, isServer: false,
                                       timesReads: submitWindow != nil, counter: counter) else {
            Glibc.close(descriptor)
            counter.sockets.subtract(1, ordering: .relaxed)
            descriptor = -1
            failConnect(.tlsHandshakeFailed(OpenSSLErrors.describe("SSL_new")))
            return
        }
        tls = stream
        let host = setup.host
        // Without the expected name in place any certificate from a trusted CA would pass.
        let nameSet: Bool
        if Self.isIPAddress(host) {
            nameSet = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(stream.ssl), host) == 1
        } else {
            nameSet = pgpush_SSL_set_tlsext_host_name(stream.ssl, host) == 1 && SSL_set1_host(stream.ssl, host) == 1
        }
        guard nameSet else {
            failConnect(.tlsHandshakeFailed(OpenSSLErrors.describe("cannot set expected host name \(host)")))
            return
        }
        phase = .handshaking
        continueHandshake()
    }

    private static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    private func continueHandshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .inProgress: return
        case .failed(let detail): failConnect(.tlsHandshakeFailed(detail))
        case .done:
            let selected = ALPN.selected(by: tls.ssl)
            guard selected == "h2" else {
                failConnect(.alpnNotNegotiated(selected: selected))
                return
            }
            guard startSession() else { return }
            phase = .open
            lastReceive = MonotonicClock.now()
            connectPending = false
            setup.shared.update { $0.phase = .open }
            setup.connected.resume(returning: .success(()))
            submitQueued()
            transmit()
        }
    }

    private func startSession() -> Bool {
        var created: OpaquePointer?
        let status = nghttp2_session_client_new(&created, callbacks, Unmanaged.passUnretained(self).toOpaque())
        guard status == 0, let created else {
            failConnect(.tlsHandshakeFailed("nghttp2_session_client_new: \(String(cString: nghttp2_strerror(status)))"))
            return false
        }
        session = created
        counter.http2Sessions.add(1, ordering: .relaxed)
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 24),
        ]
        _ = nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        // Let the server send large bodies without waiting for WINDOW_UPDATEs on the connection.
        _ = nghttp2_session_set_local_window_size(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
        return true
    }

    private func failConnect(_ error: ConnectError) {
        guard connectPending else { return }
        connectError = error
        close(.ioError(error.description))
    }

    // MARK: requests

    func enqueue(_ pending: PendingRequest) {
        if isClosed {
            pending.resolve(.failure(RequestFailure(.notProcessed, .connectionClosed(closeReason ?? .closedLocally))))
            return
        }
        if let goAway {
            resolve(pending, .failure(RequestFailure(.notProcessed, .goAway(goAway))))
            return
        }
        if drainingLocally {
            resolve(pending, .failure(RequestFailure(.notProcessed, .connectionClosed(.closedLocally))))
            return
        }
        queue.append(pending)
        if pending.deadline < earliestDeadline { earliestDeadline = pending.deadline }
        needsSubmit = true
    }

    private var streamLimit: Int {
        var limit = configuration.maxConcurrentStreams
        if !settingsReceived { limit = 1 } else { limit = min(limit, peerMaxConcurrentStreams) }
        if configuration.singleStreamUntilFirstResponse && !answeredOnce { limit = min(limit, 1) }
        return max(limit, 0)
    }

    private func submitQueued() {
        needsSubmit = false
        guard case .open = phase, let session, goAway == nil, !drainingLocally else { return }
        let limit = streamLimit
        rateTimer = nil
        while queueHead < queue.count && streams.count < limit {
            // Read per request: one instant for a whole batch would record its later
            // requests a little early, and the window could then let a 101st through
            // microseconds before its second was up.
            let now = MonotonicClock.now()
            if let window = submitWindow {
                // An answer arriving before then may move it earlier: every stream's close submits again.
                let allowed = window.nextAllowed(now: now)
                if allowed > now {
                    rateTimer = allowed
                    break
                }
            }
            let next = queue[queueHead]
            queue[queueHead] = nil
            queueHead += 1
            if let next {
                submit(next, session: session, windowSequence: submitWindow?.record(now))
            }
        }
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
        } else if queueHead > 4096 && queueHead * 2 > queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
    }

    private func submit(_ pending: PendingRequest, session: OpaquePointer, windowSequence: Int?) {
        let request = pending.request
        headerBlock.reset()
        headerBlock.add(":method", request.method)
        headerBlock.add(":scheme", "https")
        headerBlock.add(":authority", request.authority ?? defaultAuthority)
        headerBlock.add(":path", request.path)
        for field in request.headers { headerBlock.add(field.name, field.value, neverIndex: field.neverIndex) }

        var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: { session, streamID, buffer, length, flags, _, userData in
            guard let userData, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            let connection = Unmanaged<ClientConnection>.fromOpaque(userData).takeUnretainedValue()
            return connection.readBody(streamID: streamID, into: buffer, length: length, flags: flags)
        })
        let hasBody = !request.body.isEmpty
        let streamID = headerBlock.withNameValues { nameValues, count in
            hasBody ? nghttp2_submit_request(session, nil, nameValues, count, &provider, nil)
                    : nghttp2_submit_request(session, nil, nameValues, count, nil, nil)
        }
        if streamID < 0 {
            if let windowSequence { submitWindow?.abandoned(windowSequence, at: MonotonicClock.now()) }
            if streamID == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue {
                // 2^31 ids used up: this connection takes nothing more; the pool opens another.
                resolve(pending, .failure(RequestFailure(.notProcessed, .connectionClosed(.protocolError("stream ids exhausted")))))
                beginDraining()
            } else {
                resolve(pending, .failure(RequestFailure(.notProcessed, .invalidRequest(String(cString: nghttp2_strerror(streamID))))))
            }
            return
        }
        streams[streamID] = ClientStream(pending, windowSequence: windowSequence)
    }

    func readBody(streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let stream = streams[streamID] else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        let body = stream.pending.request.body
        let count = min(length, body.count - stream.bodyOffset)
        body.withUnsafeBufferPointer { source in
            buffer.update(from: source.baseAddress! + stream.bodyOffset, count: count)
        }
        stream.bodyOffset += count
        if stream.bodyOffset == body.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }

    /// The stream left: the rate window learns the latest the server can have had it.
    private func settleWindow(_ stream: ClientStream, answered: Bool) {
        guard let sequence = stream.windowSequence else { return }
        guard answered else { return submitWindow?.abandoned(sequence, at: MonotonicClock.now()) ?? () }
        // The kernel's receive time of the answer (not when this thread got to it), moved
        // from the realtime clock it comes in to the monotonic one. Realtime first: if the
        // thread is held up between the two reads, the arrival comes out later, not earlier.
        let realNow = MonotonicClock.realtimeNow()
        let now = MonotonicClock.now()
        var arrival = now
        if let received = tls?.arrivalNanoseconds, received <= realNow {
            arrival = now - min(now, realNow - received)
        }
        submitWindow?.answered(sequence, at: arrival)
    }

    /// Requests submitted so far left for the kernel once nothing is left unwritten.
    private func noteWritten(_ tls: TLSStream) {
        guard submitWindow != nil, !tls.hasPendingOutput else { return }
        submitWindow?.wrote(at: MonotonicClock.now())
    }

    private func resolve(_ pending: PendingRequest, _ result: Result<HTTP2Response, RequestFailure>) {
        pending.resolve(result)
    }

    // MARK: nghttp2 callbacks

    func receivedHeader(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let stream = streams[streamID] else { return }
        if name.count == 7 && name.elementsEqual(":status".utf8) {
            stream.status = Int(String(decoding: value, as: UTF8.self))
        } else {
            stream.headers.append(HeaderField(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
    }

    func receivedData(streamID: Int32, _ data: UnsafeBufferPointer<UInt8>) {
        streams[streamID]?.body.append(contentsOf: data)
    }

    func receivedFrame(_ frame: UnsafePointer<nghttp2_frame>) {
        let header = frame.pointee.hd
        switch UInt32(header.type) {
        case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
            if header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
                streams[header.stream_id]?.endStreamReceived = true
            }
        case NGHTTP2_SETTINGS.rawValue:
            guard header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0, let session else { return }
            let advertised = nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
            let limit = Int(min(advertised, UInt32(Int32.max)))
            let first = !settingsReceived
            let changed = limit != peerMaxConcurrentStreams
            settingsReceived = true
            peerMaxConcurrentStreams = limit
            if first {
                setup.shared.update {
                    if $0.phase == .open { $0.phase = .ready }
                    $0.peerMaxConcurrentStreams = limit
                }
                setup.shared.publish(.ready(maxConcurrentStreams: limit))
            } else if changed {
                setup.shared.update { $0.peerMaxConcurrentStreams = limit }
                setup.shared.publish(.maxConcurrentStreamsChanged(limit))
            }
            needsSubmit = true
        case NGHTTP2_GOAWAY.rawValue:
            let frame = frame.pointee.goaway
            var debug: [UInt8] = []
            if let data = frame.opaque_data, frame.opaque_data_len > 0 {
                debug = Array(UnsafeBufferPointer(start: data, count: frame.opaque_data_len))
            }
            let received = GoAway(lastStreamID: frame.last_stream_id, errorCode: frame.error_code, debugData: debug)
            goAway = received
            setup.shared.update {
                $0.goAway = received
                if case .closed = $0.phase {} else { $0.phase = .draining }
            }
            setup.shared.publish(.goAwayReceived(received))
            failQueue(RequestFailure(.notProcessed, .goAway(received)))
        default:
            break
        }
    }

    func sentFrame(_ frame: UnsafePointer<nghttp2_frame>) {
        if UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue {
            streams[frame.pointee.hd.stream_id]?.headersSent = true
        }
    }

    func frameNotSent(_ frame: UnsafePointer<nghttp2_frame>) {
        // A request whose HEADERS never left (e.g. GOAWAY arrived first) was not processed.
        guard UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue,
              let stream = streams.removeValue(forKey: frame.pointee.hd.stream_id) else { return }
        settleWindow(stream, answered: false)
        let failure = goAway.map { RequestFailure(.notProcessed, .goAway($0)) }
            ?? RequestFailure(.notProcessed, .connectionClosed(closeReason ?? .closedLocally))
        resolve(stream.pending, .failure(failure))
        needsSubmit = true
    }

    func streamClosed(streamID: Int32, errorCode: UInt32) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        needsSubmit = true
        let answered = stream.endStreamReceived && errorCode == NGHTTP2_NO_ERROR.rawValue
        settleWindow(stream, answered: answered)
        if answered, let status = stream.status {
            answeredOnce = true
            let response = HTTP2Response(status: status, headers: stream.headers, body: stream.body, streamID: streamID)
            configuration.answerObserver?(stream.pending.request, response)
            resolve(stream.pending, .success(response))
            return
        }
        let failure: RequestFailure
        if let goAway, streamID > goAway.lastStreamID {
            failure = RequestFailure(.notProcessed, .goAway(goAway))
        } else if errorCode == NGHTTP2_REFUSED_STREAM.rawValue {
            failure = RequestFailure(.notProcessed, .refusedStream)
        } else if !stream.headersSent {
            failure = RequestFailure(.notProcessed, .streamReset(errorCode: errorCode))
        } else {
            failure = RequestFailure(.mayHaveBeenProcessed, .streamReset(errorCode: errorCode))
        }
        resolve(stream.pending, .failure(failure))
    }

    // MARK: I/O and timers

    var pollEvents: Int16 {
        switch phase {
        case .connecting: return Int16(POLLOUT)
        case .handshaking, .open: return tls?.pollEvents ?? 0
        case .closed: return 0
        }
    }

    var pollDescriptor: Int32 { tls?.descriptor ?? descriptor }

    func handle(events: Int16, readBuffer: UnsafeMutableRawBufferPointer) {
        switch phase {
        case .connecting(let index):
            finishTCPConnect(addressIndex: index)
        case .handshaking:
            continueHandshake()
        case .open:
            guard let session, let tls else { return }
            if events & Int16(POLLIN | POLLHUP | POLLERR) != 0 || tls.readWaitsForWritable {
                let outcome = HTTP2Wire.receive(session: session, tls: tls, buffer: readBuffer)
                lastReceive = MonotonicClock.now()
                if case .closed(let reason) = outcome {
                    close(reason)
                    return
                }
            }
            transmit()
        case .closed:
            break
        }
    }

    /// Submits what the stream limit allows and writes everything nghttp2 has.
    func transmit() {
        guard case .open = phase, let session, let tls else { return }
        if needsSubmit { submitQueued() }
        if case .closed(let reason) = HTTP2Wire.transmit(session: session, tls: tls) {
            closeAfterReadingWhatArrived(reason)
            return
        }
        noteWritten(tls)
        // Callbacks during mem_send may free stream slots (e.g. HEADERS not sent).
        if needsSubmit && queueHead < queue.count {
            submitQueued()
            if case .closed(let reason) = HTTP2Wire.transmit(session: session, tls: tls) {
                closeAfterReadingWhatArrived(reason)
                return
            }
            noteWritten(tls)
        }
        if HTTP2Wire.isFinished(session: session, tls: tls) {
            close(goAway.map { .goAway($0) } ?? .closedLocally)
        }
    }

    /// A write failed because the server closed: answers and a GOAWAY it sent before
    /// closing may still wait unread. Reading them first keeps answered requests answered,
    /// and lets streams above the GOAWAY's last stream fail as not processed instead of
    /// "may have been processed" (which the caller would resend: a duplicate).
    private func closeAfterReadingWhatArrived(_ reason: CloseReason) {
        if let session, let tls {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
            defer { buffer.deallocate() }
            _ = HTTP2Wire.receive(session: session, tls: tls, buffer: buffer)
        }
        close(reason)
    }

    var nextTimer: UInt64? {
        switch phase {
        case .connecting, .handshaking: return connectDeadline
        case .closed: return nil
        case .open:
            let ping = pingSentAt.map { $0 &+ MonotonicClock.nanoseconds(configuration.pingTimeout) }
                ?? lastReceive &+ MonotonicClock.nanoseconds(configuration.pingInterval)
            return min(ping, earliestDeadline, rateTimer ?? .max)
        }
    }

    func handleTimers(now: UInt64) {
        switch phase {
        case .connecting, .handshaking:
            if now >= connectDeadline { failConnect(.timedOut) }
        case .closed:
            return
        case .open:
            if now >= earliestDeadline { expireRequests(now: now) }
            if let rateTimer, now >= rateTimer { submitQueued() }
            checkLiveness(now: now)
            transmit()
        }
    }

    private func checkLiveness(now: UInt64) {
        guard let session else { return }
        if let sentAt = pingSentAt {
            if lastReceive >= sentAt {
                pingSentAt = nil
            } else if now >= sentAt &+ MonotonicClock.nanoseconds(configuration.pingTimeout) {
                close(.pingTimeout)
                return
            }
        }
        if pingSentAt == nil && now >= lastReceive &+ MonotonicClock.nanoseconds(configuration.pingInterval) {
            _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
            pingSentAt = now
        }
    }

    private func expireRequests(now: UInt64) {
        var earliest = UInt64.max
        var expired: [Int32] = []
        for (streamID, stream) in streams {
            if stream.pending.deadline <= now { expired.append(streamID) }
            else { earliest = min(earliest, stream.pending.deadline) }
        }
        for streamID in expired {
            guard let stream = streams.removeValue(forKey: streamID) else { continue }
            settleWindow(stream, answered: false)
            if let session { _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue) }
            resolve(stream.pending, .failure(RequestFailure(stream.headersSent ? .mayHaveBeenProcessed : .notProcessed, .deadlineExceeded)))
        }
        for index in queueHead..<queue.count {
            guard let pending = queue[index] else { continue }
            if pending.deadline <= now {
                queue[index] = nil
                resolve(pending, .failure(RequestFailure(.notProcessed, .deadlineExceeded)))
            } else {
                earliest = min(earliest, pending.deadline)
            }
        }
        earliestDeadline = earliest
        if !expired.isEmpty { needsSubmit = true }
    }

    /// The caller's task was cancelled: withdraw the request if it is still open.
    func cancel(token: UInt64) {
        if let (streamID, stream) = streams.first(where: { $0.value.pending.token == token }) {
            streams[streamID] = nil
            settleWindow(stream, answered: false)
            if let session { _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue) }
            resolve(stream.pending, .failure(RequestFailure(stream.headersSent ? .mayHaveBeenProcessed : .notProcessed, .cancelled)))
            needsSubmit = true
            return
        }
        for index in queueHead..<queue.count where queue[index]?.token == token {
            if let pending = queue[index] { resolve(pending, .failure(RequestFailure(.notProcessed, .cancelled))) }
            queue[index] = nil
            return
        }
    }

    // MARK: closing

    private(set) var closeReason: CloseReason?

    /// Graceful: GOAWAY to the server, queued requests fail as not processed, streams in
    /// flight finish, then the connection closes. Otherwise close at once.
    func requestClose(graceful: Bool) {
        guard !isClosed else { return }
        guard graceful, case .open = phase, let session else {
            close(.closedLocally)
            return
        }
        beginDraining()
        _ = nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, NGHTTP2_NO_ERROR.rawValue, nil, 0)
        transmit()
    }

    private func beginDraining() {
        drainingLocally = true
        setup.shared.update { if case .closed = $0.phase {} else { $0.phase = .draining } }
        failQueue(RequestFailure(.notProcessed, .connectionClosed(.closedLocally)))
    }

    private func failQueue(_ failure: RequestFailure) {
        while queueHead < queue.count {
            if let pending = queue[queueHead] { resolve(pending, .failure(failure)) }
            queue[queueHead] = nil
            queueHead += 1
        }
        queue.removeAll(keepingCapacity: true)
        queueHead = 0
    }

    /// Resolves every request still open and releases socket, TLS and HTTP/2 session.
    func close(_ closing: CloseReason) {
        guard !isClosed else { return }
        var reason = closing
        // After GOAWAY either side may close first; the GOAWAY is the real reason.
        if reason == .peerClosed {
            if let goAway { reason = .goAway(goAway) } else if drainingLocally && streams.isEmpty { reason = .closedLocally }
        }
        phase = .closed
        closeReason = reason
        // Visible before any request resolves, so a caller seeing a failure sees the close too.
        setup.shared.update { $0.phase = .closed(reason) }
        let open = streams
        streams.removeAll()
        for (streamID, stream) in open {
            let failure: RequestFailure
            if let goAway, streamID > goAway.lastStreamID {
                failure = RequestFailure(.notProcessed, .goAway(goAway))
            } else {
                failure = RequestFailure(stream.headersSent ? .mayHaveBeenProcessed : .notProcessed, .connectionClosed(reason))
            }
            resolve(stream.pending, .failure(failure))
        }
        failQueue(RequestFailure(.notProcessed, .connectionClosed(reason)))
        if let session {
            nghttp2_session_del(session)
            counter.http2Sessions.subtract(1, ordering: .relaxed)
            self.session = nil
        }
        if let tls {
            tls.close()
        } else if descriptor >= 0 {
            Glibc.close(descriptor)
            counter.sockets.subtract(1, ordering: .relaxed)
        }
        tls = nil
        descriptor = -1
        // Resolved only after the socket is released, so a caller never sees a failed connect still holding it.
        if connectPending {
            connectPending = false
            setup.connected.resume(returning: .failure(connectError ?? .connectFailed(reason.description)))
        }
        setup.shared.publish(.closed(reason))
    }
}
