import CNGHTTP2

/// The nghttp2 callback table for client sessions; user_data is the `ClientConnectionEngine`,
/// which outlives its session because it deletes the session before it goes away.
enum ClientSessionCallbacks {
    static func make() -> OpaquePointer? {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return nil }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, _, userData in
            guard let userData else { return 0 }
            ClientSessionCallbacks.connection(userData).beganHeaders()
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, let name, let value, let userData else { return 0 }
            let within = ClientSessionCallbacks.connection(userData).receivedHeader(
                streamID: frame.pointee.hd.stream_id,
                name: UnsafeBufferPointer(start: name, count: nameLength),
                value: UnsafeBufferPointer(start: value, count: valueLength))
            // A callback failure makes nghttp2 stop decoding and fail the session: a header
            // list past its bound ends the connection (RST_STREAM would leave nghttp2 decoding
            // the rest of the block, all of its CPU cost, to keep HPACK state).
            return within ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, userData in
            guard let data, let userData else { return 0 }
            ClientSessionCallbacks.connection(userData).receivedData(streamID: streamID, UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            ClientSessionCallbacks.connection(userData).receivedFrame(frame)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            ClientSessionCallbacks.connection(userData).sentFrame(frame)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks) { _, frame, _, userData in
            guard let frame, let userData else { return 0 }
            ClientSessionCallbacks.connection(userData).frameNotSent(frame)
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
            guard let userData else { return 0 }
            ClientSessionCallbacks.connection(userData).streamClosed(streamID: streamID, errorCode: errorCode)
            return 0
        }
        nghttp2_session_callbacks_set_error_callback2(callbacks) { _, _, message, length, userData in
            guard let message, let userData else { return 0 }
            ClientSessionCallbacks.connection(userData).sessionErrorMessage =
                String(decoding: UnsafeRawBufferPointer(start: message, count: length), as: UTF8.self)
            return 0
        }
        return callbacks
    }

    static func connection(_ userData: UnsafeMutableRawPointer) -> ClientConnectionEngine {
        Unmanaged<ClientConnectionEngine>.fromOpaque(userData).takeUnretainedValue()
    }
}
