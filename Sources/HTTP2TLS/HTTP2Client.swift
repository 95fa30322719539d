import Dispatch
import Glibc
import Synchronization

/// Owns one I/O thread that runs every connection opened through it.
///
/// Connections are HTTP/2 over TLS with ALPN h2 and full certificate verification; pooling,
/// reconnecting and backoff belong to the caller, who follows each connection's `events`.
package final class HTTP2Client: Sendable {
    private let loop: EventLoop<ClientCommand>
    private let counter: LiveObjectCounter
    private let nextConnectionID = Atomic<Int>(1)

    package init(threadName: String = "h2-client") throws(LoopStartError) {
        let counter = LiveObjectCounter()
        self.counter = counter
        loop = try EventLoop(name: threadName, counter: counter) { _ in ClientDriver(counter: counter) }
    }

    deinit { loop.stop() }

    /// Resolves `host` afresh, connects (trying each address), completes the TLS handshake
    /// and returns the connection once ALPN h2 is agreed. The server's SETTINGS may still
    /// be on the way; requests sent before it go out one at a time.
    package func connect(host: String, port: Int, configuration: HTTP2ClientConfiguration) async throws(ConnectError) -> HTTP2ClientConnection {
        let proxy = configuration.proxy.flatMap { $0.applies(to: host) ? $0 : nil }
        var addresses: [SocketAddress] = []
        if proxy == nil || configuration.permitsAddress != nil {
            addresses = try await Self.resolve(host: host, port: port).get()
        }
        if let permits = configuration.permitsAddress {
            let resolved = addresses
            addresses = resolved.filter { permits($0.addressBytes) }
            guard !addresses.isEmpty else {
                throw .addressNotPermitted(host: host, addresses: resolved.map(\.description).joined(separator: ", "))
            }
        }
        var tunnel: Int32?
        if let proxy {
            let proxyAddresses: [SocketAddress]
            switch await Self.resolve(host: proxy.host, port: proxy.port) {
            case .success(let resolved): proxyAddresses = resolved
            case .failure(let error): throw .proxyFailed(proxy: proxy.description, detail: error.description)
            }
            let opened = await Self.blocking {
                ProxyTunnel.open(through: proxy, addresses: proxyAddresses, host: host, port: port,
                                 timeout: configuration.connectTimeout)
            }
            let (descriptor, address) = try opened.get()
            tunnel = descriptor
            addresses = [address]
        }
        let id = nextConnectionID.add(1, ordering: .relaxed).oldValue
        let shared = ClientConnectionShared()
        let connection = HTTP2ClientConnection(id: id, host: host, port: port, loop: loop, shared: shared,
                                               requestTimeout: configuration.requestTimeout)
        let loop = self.loop
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, ConnectError>, Never>) in
            let setup = ConnectionSetup(id: id, host: host, port: port, addresses: addresses, tunnel: tunnel,
                                        configuration: configuration, shared: shared, connected: continuation)
            if !loop.post(.open(setup)) {
                if let tunnel { close(tunnel) }
                continuation.resume(returning: .failure(.clientShutDown))
            }
        }
        try result.get()
        return connection
    }

    /// Open sockets, TLS and HTTP/2 sessions and I/O threads of this client.
    package var liveObjects: LiveObjectCounts { counter.snapshot }

    /// Closes every connection (their requests fail) and stops the I/O thread.
    package func shutdown() { loop.stop() }

    /// getaddrinfo blocks, so it runs on a Dispatch worker, never on the I/O thread or in
    /// the cooperative pool.
    private static func resolve(host: String, port: Int) async -> Result<[SocketAddress], ConnectError> {
        await blocking { SocketAddress.resolve(host: host, port: port) }
    }

    /// Runs `work`, which blocks, on a Dispatch worker.
    private static func blocking<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: work()) }
        }
    }
}
