import CNGHTTP2
import COpenSSL
import Glibc
import PushCrypto

/// Opening the connection: TCP to each address in turn, TLS with the expected host name and
/// ALPN h2, then the nghttp2 session and its first SETTINGS (or, when offered and chosen,
/// HTTP/1.1 at once).
extension ClientConnectionEngine {
    func startConnect(from index: Int) {
        if let tunnel = setup.tunnel, index == 0 {
            // Through the proxy already: connected, so the first poll finds it writable and the
            // TLS handshake with the host starts on it.
            counter.sockets.add(1, ordering: .relaxed)
            descriptor = tunnel
            state.connecting(addressIndex: 0)
            return
        }
        var lastError = ConnectError.connectFailed("no address")
        var next = index
        while next < setup.addresses.count {
            switch Socket.startConnect(to: setup.addresses[next]) {
            case .success(let fd):
                counter.sockets.add(1, ordering: .relaxed)
                descriptor = fd
                state.connecting(addressIndex: next)
                return
            case .failure(let error):
                lastError = error
                next += 1
            }
        }
        failConnect(lastError)
    }

    func finishTCPConnect(addressIndex: Int) {
        let code = Socket.pendingError(descriptor)
        guard code == 0 else {
            closeDescriptor()
            if addressIndex + 1 < setup.addresses.count {
                startConnect(from: addressIndex + 1)
            } else {
                failConnect(.connectFailed("\(setup.addresses[addressIndex]): \(Socket.errorText(code))"))
            }
            return
        }
        guard let stream = TLSStream(descriptor: descriptor, context: configuration.tls.context, isServer: false,
                                       timesReads: submitWindow != nil || sharedWindow != nil, counter: counter) else {
            closeDescriptor()
            failConnect(.tlsHandshakeFailed(OpenSSLErrors.describe("SSL_new")))
            return
        }
        attach(stream)
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
        state.tcpConnected()
        continueHandshake()
    }

    private static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    func continueHandshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .inProgress: return
        case .failed(let detail):
            // A certificate that did not verify keeps its particulars, not just a line of text.
            if let rejection = tls.certificateRejection() {
                failConnect(.certificateRejected(rejection))
            } else if detail.contains("no application protocol") {
                // A server with no protocol in common ends the handshake with this alert
                // (RFC 7301 §3.2) rather than completing it without ALPN.
                failConnect(.alpnNotNegotiated(selected: nil))
            } else {
                failConnect(.tlsHandshakeFailed(detail))
            }
        case .done:
            let selected = ALPN.selected(by: tls.ssl)
            // A server without ALPN speaks HTTP/1.1.
            if configuration.tls.offersHTTP1 && (selected == ALPN.http1 || selected == nil) {
                startHTTP1()
                return
            }
            guard selected == ALPN.h2 else {
                failConnect(.alpnNotNegotiated(selected: selected))
                return
            }
            guard startSession() else { return }
            state.sessionStarted(now: MonotonicClock.now())
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
            // Advisory: a well-behaved server sends no more; the header callback enforces it.
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                                   value: UInt32(clamping: configuration.maxResponseHeaderListSize)),
        ]
        _ = nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        // Let the server send large bodies without waiting for WINDOW_UPDATEs on the connection.
        _ = nghttp2_session_set_local_window_size(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
        return true
    }

    /// Only while connecting: once the session runs, failures close it with their own reason.
    func failConnect(_ error: ConnectError) {
        switch state.state {
        case .connecting, .handshaking: close(.ioError(error.description), connectError: error)
        case .awaitingSettings, .active, .draining, .closed: return
        }
    }
}
