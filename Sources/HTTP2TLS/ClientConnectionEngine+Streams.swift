import CNGHTTP2
import Glibc

/// A request's places in the rate windows it counts in: the connection's, the client's shared one.
struct WindowPlace {
    let own: Int?
    let shared: Int?
}

/// Requests: the queue, submitting into streams as far as the stream limit and the rate
/// windows allow, the stream table that nghttp2's callbacks fill, and how each request ends.
extension ClientConnectionEngine {
    func enqueue(_ pending: PendingRequest) {
        if let failure = state.requestQueued(token: pending.token, deadline: pending.deadline) {
            resolve(pending, .failure(failure))
            return
        }
        queue.append(pending)
    }

    func submitQueued() {
        let limit = state.beginSubmitting()
        guard limit > 0, session != nil || http1 != nil else { return }
        while queueHead < queue.count && streams.count < limit {
            // Read per request: one instant for a whole batch would record its later
            // requests a little early, and the window could then let a 101st through
            // microseconds before its second was up.
            let now = MonotonicClock.now()
            // An answer arriving before then may move it earlier: every stream's close submits again.
            let allowed = max(submitWindow?.nextAllowed(now: now) ?? now, sharedWindow?.nextAllowed(now: now) ?? now)
            if allowed > now {
                state.rateLimited(until: allowed)
                break
            }
            let next = queue[queueHead]
            queue[queueHead] = nil
            queueHead += 1
            if let next {
                let place = WindowPlace(own: submitWindow?.record(now), shared: sharedWindow?.record(now))
                if let shared = place.shared { sharedUnwritten.append(shared) }
                if http1 != nil {
                    submitHTTP1(next, place: place, now: now)
                } else if let session {
                    submit(next, session: session, place: place, now: now)
                }
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

    private func submit(_ pending: PendingRequest, session: OpaquePointer, place: WindowPlace, now: UInt64) {
        let request = pending.request
        headerBlock.reset()
        headerBlock.add(":method", request.method)
        headerBlock.add(":scheme", "https")
        headerBlock.add(":authority", request.authority ?? defaultAuthority)
        headerBlock.add(":path", request.path)
        for field in request.headers { headerBlock.add(field.name, field.value, neverIndex: field.neverIndex) }

        var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: { _, streamID, buffer, length, flags, _, userData in
            guard let userData, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            return ClientSessionCallbacks.connection(userData).readBody(streamID: streamID, into: buffer, length: length, flags: flags)
        })
        let hasBody = !request.body.isEmpty
        let streamID = headerBlock.withNameValues { nameValues, count in
            hasBody ? nghttp2_submit_request(session, nil, nameValues, count, &provider, nil)
                    : nghttp2_submit_request(session, nil, nameValues, count, nil, nil)
        }
        if streamID < 0 {
            abandon(place)
            if streamID == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue {
                // 2^31 ids used up: this connection takes nothing more; the pool opens another.
                resolve(pending, .failure(RequestFailure(.notProcessed, .connectionClosed(.protocolError("stream ids exhausted")))))
                if let failure = state.drainLocally() { startedDraining(failing: failure) }
            } else {
                resolve(pending, .failure(RequestFailure(.notProcessed, .invalidRequest(String(cString: nghttp2_strerror(streamID))))))
            }
            return
        }
        streams[streamID] = ClientStream(pending, windowSequence: place.own, sharedSequence: place.shared)
        state.requestSubmitted(token: pending.token, now: now)
    }

    /// A request that will not be sent after all leaves the windows it was counted in.
    func abandon(_ place: WindowPlace) {
        let now = MonotonicClock.now()
        if let own = place.own { submitWindow?.abandoned(own, at: now) }
        if let shared = place.shared { sharedWindow?.abandoned(shared, at: now) }
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
    func settleWindow(_ stream: ClientStream, answered: Bool) {
        guard stream.windowSequence != nil || stream.sharedSequence != nil else { return }
        guard answered else { return abandon(WindowPlace(own: stream.windowSequence, shared: stream.sharedSequence)) }
        // The kernel's receive time of the answer (not when this thread got to it), moved
        // from the realtime clock it comes in to the monotonic one. Realtime first: if the
        // thread is held up between the two reads, the arrival comes out later, not earlier.
        let realNow = MonotonicClock.realtimeNow()
        let now = MonotonicClock.now()
        var arrival = now
        if let received = tls?.arrivalNanoseconds, received <= realNow {
            arrival = now - min(now, realNow - received)
        }
        if let own = stream.windowSequence { submitWindow?.answered(own, at: arrival) }
        if let shared = stream.sharedSequence { sharedWindow?.answered(shared, at: arrival) }
    }

    /// Requests submitted so far left for the kernel once nothing is left unwritten.
    func noteWritten(_ tls: TLSStream) {
        guard submitWindow != nil || !sharedUnwritten.isEmpty, !tls.hasPendingOutput else { return }
        let now = MonotonicClock.now()
        submitWindow?.wrote(at: now)
        if !sharedUnwritten.isEmpty {
            sharedWindow?.wrote(sharedUnwritten, at: now)
            sharedUnwritten.removeAll(keepingCapacity: true)
        }
    }

    func resolve(_ pending: PendingRequest, _ result: Result<HTTP2Response, RequestFailure>) {
        state.requestEnded(token: pending.token)
        pending.resolve(result)
    }

    // MARK: nghttp2 callbacks

    /// A header block begins (response HEADERS, or trailers): its decoded size counts from 0.
    func beganHeaders() {
        headerBlockSize = 0
    }

    /// Returns false when the answer's header list went past its bound: the connection
    /// ends, and nghttp2 (told by the callback failing) decodes nothing more of it. The
    /// block's size is counted for every stream, known or not: an answer to a stream this
    /// side already gave up on costs the same to decode.
    func receivedHeader(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Bool {
        // Counted as SETTINGS_MAX_HEADER_LIST_SIZE counts (RFC 9113 §6.5.2), which we advertise.
        let size = name.count + value.count + 32
        headerBlockSize += size
        let stream = streams[streamID]
        if let stream { stream.headerListSize += size }
        let limit = configuration.maxResponseHeaderListSize
        guard headerBlockSize <= limit && (stream?.headerListSize ?? 0) <= limit else {
            // The request fails in `close`, once nghttp2 returns: after the connection's
            // status shows the close, as for every other request that a close fails.
            stream?.exceeded = .headerList(limit: limit)
            state.abort(for: .headerList(limit: limit))
            return false
        }
        guard let stream else { return true }
        if name.count == 7 && name.elementsEqual(":status".utf8) {
            stream.status = Int(String(decoding: value, as: UTF8.self))
        } else {
            stream.headers.append(name: name, value: value)
        }
        return true
    }

    /// Past the body bound the stream is reset and nothing more of it is kept (nghttp2 drops
    /// what still arrives for it). Flow control bounds nothing here: nghttp2 refills the
    /// windows as it reads, so without this only the request's deadline would end an
    /// endless body.
    func receivedData(streamID: Int32, _ data: UnsafeBufferPointer<UInt8>) {
        guard let stream = streams[streamID] else { return }
        let limit = configuration.maxResponseBodySize
        guard stream.body.count + data.count <= limit else {
            withdraw(streamID: streamID, stream, failure: .responseTooLarge(.body(limit: limit)))
            return
        }
        stream.body.append(contentsOf: data)
    }

    func receivedFrame(_ frame: UnsafePointer<nghttp2_frame>) {
        let header = frame.pointee.hd
        switch UInt32(header.type) {
        case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
            // The peer answers requests (however this one ends): it is not unresponsive.
            if UInt32(header.type) == NGHTTP2_HEADERS.rawValue { state.answerReceived(now: MonotonicClock.now()) }
            if header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
                streams[header.stream_id]?.endStreamReceived = true
            }
        case NGHTTP2_SETTINGS.rawValue:
            guard header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0, let session else { return }
            let advertised = nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
            switch state.settingsReceived(maxConcurrentStreams: Int(min(advertised, UInt32(Int32.max)))) {
            case .first(let limit):
                setup.shared.update {
                    if $0.phase == .open { $0.phase = .ready }
                    $0.peerMaxConcurrentStreams = limit
                }
                publishStreamLimit()
                setup.shared.publish(.ready(maxConcurrentStreams: limit))
            case .changed(let limit):
                setup.shared.update { $0.peerMaxConcurrentStreams = limit }
                publishStreamLimit()
                setup.shared.publish(.maxConcurrentStreamsChanged(limit))
            case .unchanged:
                break
            }
        case NGHTTP2_GOAWAY.rawValue:
            let frame = frame.pointee.goaway
            var debug: [UInt8] = []
            if let data = frame.opaque_data, frame.opaque_data_len > 0 {
                debug = Array(UnsafeBufferPointer(start: data, count: frame.opaque_data_len))
            }
            let received = GoAway(lastStreamID: frame.last_stream_id, errorCode: frame.error_code, debugData: debug)
            guard let failure = state.goAwayReceived(received) else { return }
            setup.shared.update {
                $0.goAway = received
                if case .closed = $0.phase {} else { $0.phase = .draining }
            }
            setup.shared.publish(.goAwayReceived(received))
            failQueue(failure)
        default:
            break
        }
    }

    func sentFrame(_ frame: UnsafePointer<nghttp2_frame>) {
        if UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue {
            streams[frame.pointee.hd.stream_id]?.headersSent = true
        } else if UInt32(frame.pointee.hd.type) == NGHTTP2_GOAWAY.rawValue, frame.pointee.goaway.error_code != 0,
                  sessionProtocolError == nil {
            // nghttp2 ended the session over something the peer sent.
            let code = frame.pointee.goaway.error_code
            let name = String(cString: nghttp2_http2_strerror(code))
            sessionProtocolError = sessionErrorMessage.map { "\($0) (sent GOAWAY \(name))" } ?? "sent GOAWAY \(name)"
        }
    }

    func frameNotSent(_ frame: UnsafePointer<nghttp2_frame>) {
        // A request whose HEADERS never left (e.g. GOAWAY arrived first) was not processed.
        guard UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue,
              let stream = streams.removeValue(forKey: frame.pointee.hd.stream_id) else { return }
        settleWindow(stream, answered: false)
        let failure = state.goAway.map { RequestFailure(.notProcessed, .goAway($0)) }
            ?? RequestFailure(.notProcessed, .connectionClosed(closeReason ?? .closedLocally))
        resolve(stream.pending, .failure(failure))
        state.streamEnded()
    }

    /// Publishes the stream limit while the connection takes requests (draining, it is 0
    /// and the status says so by its phase).
    func publishStreamLimit() {
        let limit = state.streamLimit
        guard limit > 0 else { return }
        setup.shared.update { if $0.streamLimit != limit { $0.streamLimit = limit } }
    }

    func streamClosed(streamID: Int32, errorCode: UInt32) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        state.streamEnded()
        let answered = stream.endStreamReceived && errorCode == NGHTTP2_NO_ERROR.rawValue
        settleWindow(stream, answered: answered)
        if answered, let status = stream.status {
            // Only the first answer can raise the limit: later ones take no lock here.
            if state.streamAnswered() { publishStreamLimit() }
            let response = HTTP2Response(status: status, headers: stream.headers, body: stream.body, streamID: streamID)
            configuration.answerObserver?(stream.pending.request, response)
            resolve(stream.pending, .success(response))
            return
        }
        let failure: RequestFailure
        if let goAway = state.goAway, streamID > goAway.lastStreamID {
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

    // MARK: ending requests early

    /// The state machine found these requests (by token) past their deadlines.
    func expireRequests(_ tokens: Set<UInt64>) {
        let expired = streams.filter { tokens.contains($0.value.pending.token) }
        for (streamID, stream) in expired {
            withdraw(streamID: streamID, stream, failure: .deadlineExceeded)
        }
        for index in queueHead..<queue.count {
            guard let pending = queue[index], tokens.contains(pending.token) else { continue }
            queue[index] = nil
            resolve(pending, .failure(RequestFailure(.notProcessed, .deadlineExceeded)))
        }
    }

    /// The caller's task was cancelled: withdraw the request if it is still open.
    func cancel(token: UInt64) {
        if let (streamID, stream) = streams.first(where: { $0.value.pending.token == token }) {
            withdraw(streamID: streamID, stream, failure: .cancelled)
            return
        }
        for index in queueHead..<queue.count where queue[index]?.token == token {
            if let pending = queue[index] { resolve(pending, .failure(RequestFailure(.notProcessed, .cancelled))) }
            queue[index] = nil
            return
        }
    }

    /// Resets a stream this side gives up on; the server may have processed it once its
    /// HEADERS left.
    private func withdraw(streamID: Int32, _ stream: ClientStream, failure cause: RequestFailure.Cause) {
        streams[streamID] = nil
        settleWindow(stream, answered: false)
        if let session { _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue) }
        resolve(stream.pending, .failure(RequestFailure(stream.headersSent ? .mayHaveBeenProcessed : .notProcessed, cause)))
        state.streamEnded()
        // HTTP/1.1 cannot cancel one request: its answer may still come, so the connection
        // takes nothing more and closes (queued requests fail as not processed, for another).
        if http1 != nil, let failure = state.drainLocally() { startedDraining(failing: failure) }
    }

    /// The connection takes no new requests: the status says so and the queue fails.
    func startedDraining(failing failure: RequestFailure) {
        setup.shared.update { if case .closed = $0.phase {} else { $0.phase = .draining } }
        failQueue(failure)
    }

    func failQueue(_ failure: RequestFailure) {
        while queueHead < queue.count {
            if let pending = queue[queueHead] { resolve(pending, .failure(failure)) }
            queue[queueHead] = nil
            queueHead += 1
        }
        queue.removeAll(keepingCapacity: true)
        queueHead = 0
    }
}
