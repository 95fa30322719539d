import CNGHTTP2

/// Moves bytes between an nghttp2 session (mem_recv/mem_send) and a TLS stream.
enum HTTP2Wire {
    enum Outcome: Equatable { case ok, closed(CloseReason) }

    /// Reads everything the socket has and feeds it to nghttp2.
    static func receive(session: OpaquePointer, tls: TLSStream, buffer: UnsafeMutableRawBufferPointer) -> Outcome {
        while true {
            switch tls.read(into: buffer) {
            case .data(let count):
                let consumed = nghttp2_session_mem_recv(session, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), count)
                if consumed < 0 {
                    return .closed(.protocolError(String(cString: nghttp2_strerror(Int32(consumed)))))
                }
            case .wouldBlock: return .ok
            case .closed: return .closed(.peerClosed)
            case .failed(let text): return .closed(.ioError(text))
            }
        }
    }

    /// Writes pending output, then serialises more frames in batches of up to 64 KiB per
    /// SSL_write until nghttp2 has nothing left or the socket is full.
    static func transmit(session: OpaquePointer, tls: TLSStream) -> Outcome {
        while true {
            if tls.hasPendingOutput {
                switch tls.flush() {
                case .done: break
                case .inProgress: return .ok
                case .failed(let text): return .closed(.ioError(text))
                }
            }
            while tls.pendingOutputCount < TLSStream.batchSize {
                var data: UnsafePointer<UInt8>?
                let count = nghttp2_session_mem_send(session, &data)
                if count < 0 { return .closed(.protocolError(String(cString: nghttp2_strerror(Int32(count))))) }
                guard count > 0, let data else { break }
                tls.append(data, count: count)
            }
            if !tls.hasPendingOutput { return .ok }
        }
    }

    /// nghttp2 has nothing more to read or write: the session is finished (after GOAWAY).
    static func isFinished(session: OpaquePointer, tls: TLSStream) -> Bool {
        nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 && !tls.hasPendingOutput
    }
}

/// Builds nghttp2_nv arrays in reusable buffers (nghttp2 copies them at submit time).
struct HeaderBlockBuilder {
    private var bytes: [UInt8] = []
    private var fields: [(nameStart: Int, nameLength: Int, valueStart: Int, valueLength: Int, flags: UInt8)] = []

    init() {
        bytes.reserveCapacity(1024)
        fields.reserveCapacity(16)
    }

    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
    }

    mutating func add(_ name: String, _ value: String, neverIndex: Bool = false) {
        let nameStart = bytes.count
        for byte in name.utf8 {
            // HTTP/2 requires lowercase field names.
            bytes.append(byte >= 65 && byte <= 90 ? byte + 32 : byte)
        }
        let valueStart = bytes.count
        bytes.append(contentsOf: value.utf8)
        fields.append((nameStart, valueStart - nameStart, valueStart, bytes.count - valueStart,
                       neverIndex ? UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) : UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
    }

    /// Calls `body` with the nv array; the pointers are valid only inside it.
    mutating func withNameValues<T>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> T) -> T {
        let fields = self.fields
        if bytes.isEmpty { bytes.append(0) }  // guarantees a base address
        return bytes.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            return withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(fields.count, 1)) { nameValues in
                for (index, field) in fields.enumerated() {
                    nameValues[index] = nghttp2_nv(name: base + field.nameStart, value: base + field.valueStart,
                                                   namelen: field.nameLength, valuelen: field.valueLength, flags: field.flags)
                }
                return body(UnsafePointer(nameValues.baseAddress!), fields.count)
            }
        }
    }
}
