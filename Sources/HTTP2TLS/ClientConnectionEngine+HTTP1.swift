/// A connection whose server chose HTTP/1.1 (`HTTP2ClientConfiguration.tls.offersHTTP1`):
/// one request at a time, written whole, its answer read with `HTTP1Parser`, the connection
/// kept for the next. Requests, deadlines, the rate window and closing go through the same
/// state machine and stream table as HTTP/2, each request under a stream id of its own.
extension ClientConnectionEngine {
    func startHTTP1() {
        http1 = HTTP1Parser(kind: .response, maxHeadBytes: configuration.maxResponseHeaderListSize,
                            maxBodyBytes: configuration.maxResponseBodySize)
        let limit = state.http1Started(now: MonotonicClock.now())
        setup.shared.update { $0.phase = .open }
        setup.connected.resume(returning: .success(()))
        setup.shared.update {
            $0.phase = .ready
            $0.peerMaxConcurrentStreams = limit
        }
        publishStreamLimit()
        setup.shared.publish(.ready(maxConcurrentStreams: limit))
        submitQueued()
        transmit()
    }

    func submitHTTP1(_ pending: PendingRequest, place: WindowPlace, now: UInt64) {
        guard let tls else { return }
        let bytes: [UInt8]
        do {
            bytes = try HTTP1.request(pending.request, authority: pending.request.authority ?? defaultAuthority)
        } catch {
            abandon(place)
            resolve(pending, .failure(RequestFailure(.notProcessed, .invalidRequest("HTTP/1.1: \(error)"))))
            return
        }
        let streamID = http1NextStreamID
        http1NextStreamID = http1NextStreamID >= Int32.max - 2 ? 1 : http1NextStreamID + 2
        let stream = ClientStream(pending, windowSequence: place.own, sharedSequence: place.shared)
        // Handed to TLS whole: from here on the server may have it.
        stream.headersSent = true
        streams[streamID] = stream
        bytes.withUnsafeBufferPointer { tls.append($0.baseAddress!, count: $0.count) }
        state.requestSubmitted(token: pending.token, now: now)
    }

    func transmitHTTP1(tls: TLSStream) {
        if state.submitDue { submitQueued() }
        if tls.hasPendingOutput, case .failed(let text) = tls.flush() {
            close(.ioError(text))
            return
        }
        noteWritten(tls)
        var draining = false
        if case .draining = state.state { draining = true }
        if let reason = state.closeDue(sessionFinished: draining && streams.isEmpty && !tls.hasPendingOutput) {
            close(reason)
        }
    }

    /// Reads what the socket has and resolves each complete answer. Returns false once the
    /// connection closed.
    func receiveHTTP1(tls: TLSStream, buffer: UnsafeMutableRawBufferPointer) -> Bool {
        while true {
            switch tls.read(into: buffer) {
            case .data(let count):
                state.received(now: MonotonicClock.now())
                http1?.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                if let reason = resolveHTTP1Answers(atEnd: false) {
                    close(reason)
                    return false
                }
            case .wouldBlock:
                return true
            case .closed:
                // An answer that runs to the close is complete now.
                close(resolveHTTP1Answers(atEnd: true) ?? .peerClosed)
                return false
            case .failed(let text):
                close(.ioError(text))
                return false
            }
        }
    }

    /// Resolves the request in flight with each complete answer read; a reason to close when
    /// the bytes are not an answer, or one too large (the request then fails for its bound).
    private func resolveHTTP1Answers(atEnd: Bool) -> CloseReason? {
        while true {
            let message: HTTP1Message?
            do {
                message = try http1?.next(atEnd: atEnd)
            } catch .tooLarge(let bound) {
                streams.values.forEach { $0.exceeded = bound }
                state.abort(for: bound)
                return .responseTooLarge(bound)
            } catch let error {
                return .protocolError("HTTP/1.1: \(error)")
            }
            guard let message else { return nil }
            // One request at a time: the answer is to the one in flight.
            guard let (streamID, stream) = streams.min(by: { $0.key < $1.key }) else {
                return .protocolError("HTTP/1.1: an answer with no request")
            }
            streams[streamID] = nil
            let now = MonotonicClock.now()
            state.answerReceived(now: now)
            state.streamEnded()
            settleWindow(stream, answered: true)
            if state.streamAnswered() { publishStreamLimit() }
            var headers = ResponseHeaders()
            for field in message.fields {
                var name = field.name, value = field.value
                name.withUTF8 { name in value.withUTF8 { value in headers.append(name: name, value: value) } }
            }
            let response = HTTP2Response(status: message.status, headers: headers, body: message.body, streamID: streamID)
            configuration.answerObserver?(stream.pending.request, response)
            resolve(stream.pending, .success(response))
            if message.closes, let failure = state.drainLocally() { startedDraining(failing: failure) }
        }
    }
}
