import Glibc

/// Opens a `CONNECT` tunnel through an `HTTPProxy`: TCP to the proxy, the request, its
/// answer's head. On 2xx the socket (non-blocking) carries the TLS connection to the
/// target from its first byte; anything else is a `ConnectError` that says what the proxy
/// said. It blocks until then (at most `timeout`), so it runs where blocking is allowed,
/// like name resolution.
enum ProxyTunnel {
    /// The most a proxy's answer head may take; a longer one is refused.
    static let largestHead = 16 * 1024

    static func open(through proxy: HTTPProxy, addresses: [SocketAddress], host: String, port: Int,
                     timeout: Duration) -> Result<(descriptor: Int32, address: SocketAddress), ConnectError> {
        let deadline = MonotonicClock.now() &+ UInt64(timeout.components.seconds) * 1_000_000_000
            &+ UInt64(timeout.components.attoseconds / 1_000_000_000)
        var lastError = ConnectError.proxyFailed(proxy: proxy.description, detail: "no address")
        for address in addresses {
            let descriptor: Int32
            switch Socket.startConnect(to: address) {
            case .success(let fd): descriptor = fd
            case .failure(let error):
                lastError = .proxyFailed(proxy: proxy.description, detail: error.description)
                continue
            }
            switch handshake(descriptor, proxy: proxy, host: host, port: port, deadline: deadline) {
            case .success:
                return .success((descriptor, address))
            case .failure(let error):
                close(descriptor)
                if case .proxyRefused = error { return .failure(error) }
                lastError = error
            }
        }
        return .failure(lastError)
    }

    private static func handshake(_ fd: Int32, proxy: HTTPProxy, host: String, port: Int,
                                  deadline: UInt64) -> Result<Void, ConnectError> {
        let failed = { (detail: String) in ConnectError.proxyFailed(proxy: proxy.description, detail: detail) }
        guard wait(fd, for: Int16(POLLOUT), until: deadline) else { return .failure(.timedOut) }
        let code = Socket.pendingError(fd)
        guard code == 0 else { return .failure(failed("TCP connect failed: \(Socket.errorText(code))")) }
        let request = proxy.connectRequest(host: host, port: port)
        var written = 0
        while written < request.count {
            let count = request[written...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count > 0 { written += count; continue }
            guard count < 0, errno == EAGAIN || errno == EINTR else { return .failure(failed("write: \(Socket.errorText())")) }
            guard wait(fd, for: Int16(POLLOUT), until: deadline) else { return .failure(.timedOut) }
        }
        // Byte by byte up to the blank line: nothing of the tunnel after it may be consumed here.
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while ProxyAnswer.headLength(head) == nil {
            guard head.count < largestHead else { return .failure(failed("its answer's head is over \(largestHead) bytes")) }
            let count = recv(fd, &byte, 1, 0)
            if count == 1 { head.append(byte); continue }
            if count == 0 { return .failure(failed("it closed the connection without an answer")) }
            guard errno == EAGAIN || errno == EINTR else { return .failure(failed("read: \(Socket.errorText())")) }
            guard wait(fd, for: Int16(POLLIN), until: deadline) else { return .failure(.timedOut) }
        }
        guard let status = ProxyAnswer.status(ofHead: head) else { return .failure(failed("its answer is not HTTP")) }
        guard (200..<300).contains(status.code) else {
            return .failure(.proxyRefused(proxy: proxy.description, status: status.code, reason: status.reason))
        }
        return .success(())
    }

    /// Waits until `fd` is ready for `events`; false at the deadline.
    private static func wait(_ fd: Int32, for events: Int16, until deadline: UInt64) -> Bool {
        while true {
            let now = MonotonicClock.now()
            guard now < deadline else { return false }
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let milliseconds = Int32(clamping: (deadline - now) / 1_000_000 + 1)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { return true }  // the next read or write says what went wrong
        }
    }
}
