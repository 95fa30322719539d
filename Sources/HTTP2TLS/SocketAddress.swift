import Glibc

/// A resolved socket address (IPv4 or IPv6) as raw `sockaddr` bytes.
struct SocketAddress: Sendable, CustomStringConvertible {
    let family: Int32
    let storage: [UInt8]

    init(_ address: UnsafePointer<sockaddr>, length: socklen_t) {
        family = Int32(address.pointee.sa_family)
        storage = Array(UnsafeRawBufferPointer(start: address, count: Int(length)))
    }

    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        storage.withUnsafeBytes { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
    }

    /// The address alone: 4 bytes (IPv4) or 16 (IPv6), in network order.
    var addressBytes: [UInt8] {
        storage.withUnsafeBytes { raw -> [UInt8] in
            if family == AF_INET6 {
                let offset = MemoryLayout<sockaddr_in6>.offset(of: \sockaddr_in6.sin6_addr)!
                return Array(raw[offset..<offset + 16])
            }
            let offset = MemoryLayout<sockaddr_in>.offset(of: \sockaddr_in.sin_addr)!
            return Array(raw[offset..<offset + 4])
        }
    }

    var description: String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let status = withSockaddr { getnameinfo($0, $1, &host, socklen_t(host.count), &service, socklen_t(service.count),
                                                NI_NUMERICHOST | NI_NUMERICSERV) }
        guard status == 0 else { return "?" }
        let hostText = Self.text(host)
        return family == AF_INET6 ? "[\(hostText)]:\(Self.text(service))" : "\(hostText):\(Self.text(service))"
    }

    private static func text(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Blocking getaddrinfo; run it off the I/O thread.
    static func resolve(host: String, port: Int, passive: Bool = false) -> Result<[SocketAddress], ConnectError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = passive ? AI_PASSIVE : AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            return .failure(.resolutionFailed(host: host, detail: String(cString: gai_strerror(status))))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry = list
        while let current = entry {
            if let address = current.pointee.ai_addr {
                addresses.append(SocketAddress(address, length: current.pointee.ai_addrlen))
            }
            entry = current.pointee.ai_next
        }
        return addresses.isEmpty ? .failure(.resolutionFailed(host: host, detail: "no addresses")) : .success(addresses)
    }
}

/// Thin wrappers over non-blocking BSD socket calls.
enum Socket {
    static func errorText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

    /// Starts a non-blocking connect. Returns the fd (connect in progress or done) or an errno text.
    static func startConnect(to address: SocketAddress) -> Result<Int32, ConnectError> {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(.connectFailed(errorText())) }
        setNoDelay(fd)
        let status = address.withSockaddr { connect(fd, $0, $1) }
        if status == 0 || errno == EINPROGRESS { return .success(fd) }
        let text = errorText()
        close(fd)
        return .failure(.connectFailed("\(address): \(text)"))
    }

    /// The outcome of a finished non-blocking connect (0 = connected).
    static func pendingError(_ fd: Int32) -> Int32 {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) != 0 { return errno }
        return code
    }

    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// A listening, non-blocking socket bound to `host:port`; returns it with the bound port.
    static func listen(host: String, port: Int, backlog: Int32 = 1024) throws(ServerError) -> (fd: Int32, port: Int) {
        let addresses: [SocketAddress]
        switch SocketAddress.resolve(host: host, port: port, passive: true) {
        case .success(let list): addresses = list
        case .failure(let error): throw .cannotListen(error.description)
        }
        var lastError = "no address"
        for address in addresses {
            let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { lastError = errorText(); continue }
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            let bound = address.withSockaddr { bind(fd, $0, $1) }
            guard bound == 0, Glibc.listen(fd, backlog) == 0 else {
                lastError = "\(address): \(errorText())"
                close(fd)
                continue
            }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0 else { lastError = errorText(); close(fd); continue }
            let boundPort = withUnsafePointer(to: &storage) { pointer -> Int in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Int in
                    if Int32(address.pointee.sa_family) == AF_INET6 {
                        return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
                    }
                    return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
                }
            }
            return (fd, boundPort)
        }
        throw .cannotListen(lastError)
    }

    static func peerAddress(_ fd: Int32) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                guard getpeername(fd, address, &length) == 0 else { return "?" }
                return SocketAddress(address, length: length).description
            }
        }
    }
}
