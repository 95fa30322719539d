import CNGHTTP2
import COpenSSL
import Glibc

/// One client HTTP/2-over-TLS connection as the I/O thread runs it, behind the public
/// handle `HTTP2ClientConnection`. Thread-confined to the I/O thread: it owns the socket,
/// the SSL* and the nghttp2_session* and is never touched from elsewhere. What the
/// connection may do next is decided by `state`; this class does the I/O. Connecting is in
/// ClientConnectionEngine+Connect.swift, requests and nghttp2's callbacks in
/// ClientConnectionEngine+Streams.swift; a connection whose server chose HTTP/1.1 in
/// ClientConnectionEngine+HTTP1.swift.
final class ClientConnectionEngine {
    let id: Int
    let setup: ConnectionSetup
    var configuration: HTTP2ClientConfiguration { setup.configuration }
    let counter: LiveObjectCounter
    let callbacks: OpaquePointer
    var state: ClientConnectionStateMachine
    var descriptor: Int32 = -1
    private(set) var tls: TLSStream?
    var session: OpaquePointer?
    /// Set instead of `session` when the server chose HTTP/1.1: reads its answers.
    var http1: HTTP1Parser?
    /// HTTP/1.1 requests are numbered like client streams (1, 3, 5, …) so the rest of the
    /// engine, and `HTTP2Response.streamID`, need not know the difference.
    var http1NextStreamID: Int32 = 1
    /// nghttp2's last error message, and the protocol error it ended the session for (it
    /// sent GOAWAY with an error code): the close reason then, not `closedLocally`.
    var sessionErrorMessage: String?
    var sessionProtocolError: String?

    var streams: [Int32: ClientStream] = [:]
    var queue: [PendingRequest?] = []
    var queueHead = 0
    var headerBlock = HeaderBlockBuilder()
    /// The decoded size of the header block being received (nghttp2 decodes one at a time).
    var headerBlockSize = 0
    /// The per-connection rate cap, if configured.
    var submitWindow: SubmitWindow?
    /// The cap shared with the client's other connections, if configured, and this
    /// connection's requests in it not yet handed to the kernel.
    var sharedWindow: SharedSubmitWindow? { setup.configuration.sharedWindow }
    var sharedUnwritten: [Int] = []
    let defaultAuthority: String

    var isClosed: Bool { state.isClosed }
    var closeReason: CloseReason? { state.closeReason }

    init(setup: ConnectionSetup, callbacks: OpaquePointer, counter: LiveObjectCounter) {
        self.id = setup.id
        self.setup = setup
        self.callbacks = callbacks
        self.counter = counter
        defaultAuthority = setup.port == 443 ? setup.host : "\(setup.host):\(setup.port)"
        state = ClientConnectionStateMachine(limits: .init(setup.configuration), now: MonotonicClock.now())
        submitWindow = setup.configuration.maxRequestsPerSecond.map(SubmitWindow.init(limit:))
        startConnect(from: 0)
    }

    deinit {
        releaseResources()
    }

    /// Deletes the session and closes the socket (through TLS once that exists).
    private func releaseResources() {
        if let session {
            nghttp2_session_del(session)
            counter.http2Sessions.subtract(1, ordering: .relaxed)
            self.session = nil
        }
        if let tls {
            tls.close()
        } else if descriptor >= 0 {
            closeDescriptor()
        }
        tls = nil
        descriptor = -1
        http1 = nil
    }

    /// Closes the TCP socket that has no TLS stream over it yet.
    func closeDescriptor() {
        Glibc.close(descriptor)
        counter.sockets.subtract(1, ordering: .relaxed)
        descriptor = -1
    }

    func attach(_ stream: TLSStream) {
        tls = stream
    }

    // MARK: I/O and timers

    var pollEvents: Int16 {
        switch state.state {
        case .connecting: return Int16(POLLOUT)
        case .handshaking, .awaitingSettings, .active, .draining: return tls?.pollEvents ?? 0
        case .closed: return 0
        }
    }

    var pollDescriptor: Int32 { tls?.descriptor ?? descriptor }

    func handle(events: Int16, readBuffer: UnsafeMutableRawBufferPointer) {
        switch state.state {
        case .connecting(let index, _):
            finishTCPConnect(addressIndex: index)
        case .handshaking:
            continueHandshake()
        case .awaitingSettings, .active, .draining:
            if http1 != nil, let tls {
                if events & Int16(POLLIN | POLLHUP | POLLERR) != 0 || tls.readWaitsForWritable {
                    guard receiveHTTP1(tls: tls, buffer: readBuffer) else { return }
                }
                transmit()
                return
            }
            guard let session, let tls else { return }
            if events & Int16(POLLIN | POLLHUP | POLLERR) != 0 || tls.readWaitsForWritable {
                let outcome = HTTP2Wire.receive(session: session, tls: tls, buffer: readBuffer)
                state.received(now: MonotonicClock.now())
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
        if http1 != nil, state.sessionRunning, let tls { return transmitHTTP1(tls: tls) }
        guard state.sessionRunning, let session, let tls else { return }
        if state.submitDue { submitQueued() }
        if case .closed(let reason) = HTTP2Wire.transmit(session: session, tls: tls) {
            closeAfterReadingWhatArrived(reason)
            return
        }
        noteWritten(tls)
        // Callbacks during mem_send may free stream slots (e.g. HEADERS not sent).
        if state.submitDue && queueHead < queue.count {
            submitQueued()
            if case .closed(let reason) = HTTP2Wire.transmit(session: session, tls: tls) {
                closeAfterReadingWhatArrived(reason)
                return
            }
            noteWritten(tls)
        }
        if let reason = state.closeDue(sessionFinished: HTTP2Wire.isFinished(session: session, tls: tls)) {
            close(reason == .closedLocally ? sessionProtocolError.map { .protocolError($0) } ?? reason : reason)
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

    var nextTimer: UInt64? { state.nextTimer }

    func handleTimers(now: UInt64) {
        for action in state.timerFired(now: now) {
            switch action {
            case .failConnect(let error): failConnect(error)
            case .expireRequests(let tokens): expireRequests(tokens)
            case .submit: submitQueued()
            case .sendPing: if let session { _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil) }
            case .close(let reason): close(reason)
            }
        }
        transmit()
    }

    // MARK: closing

    /// Graceful: GOAWAY to the server, queued requests fail as not processed, streams in
    /// flight finish, then the connection closes. Otherwise close at once.
    func requestClose(graceful: Bool) {
        switch state.closeRequested(graceful: graceful) {
        case .none:
            return
        case .closeNow:
            close(.closedLocally)
        case .drain(let failure):
            startedDraining(failing: failure)
            if let session {
                _ = nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, NGHTTP2_NO_ERROR.rawValue, nil, 0)
            }
            transmit()
        }
    }

    /// Resolves every request still open and releases socket, TLS and HTTP/2 session.
    /// `connectError` is what a caller still waiting for the connect learns.
    func close(_ proposed: CloseReason, connectError: ConnectError? = nil) {
        guard let closing = state.close(proposed, openStreams: streams.count) else { return }
        let reason = closing.reason
        // Visible before any request resolves, so a caller seeing a failure sees the close too.
        setup.shared.update { $0.phase = .closed(reason) }
        let open = streams
        streams.removeAll()
        for (streamID, stream) in open {
            let failure: RequestFailure
            if let bound = stream.exceeded {
                failure = RequestFailure(.mayHaveBeenProcessed, .responseTooLarge(bound))
            } else if let goAway = closing.goAway, streamID > goAway.lastStreamID {
                failure = RequestFailure(.notProcessed, .goAway(goAway))
            } else {
                failure = RequestFailure(stream.headersSent ? .mayHaveBeenProcessed : .notProcessed, .connectionClosed(reason))
            }
            resolve(stream.pending, .failure(failure))
        }
        failQueue(RequestFailure(.notProcessed, .connectionClosed(reason)))
        releaseResources()
        // Resolved only after the socket is released, so a caller never sees a failed connect still holding it.
        if closing.connectPending {
            setup.connected.resume(returning: .failure(connectError ?? .connectFailed(reason.description)))
        }
        setup.shared.publish(.closed(reason))
    }
}
