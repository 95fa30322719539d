import Foundation
import Synchronization

/// A small HTTP/1.1 endpoint for Prometheus and orchestrators
/// (`PGPUSH_METRICS_ADDR`, e.g. `127.0.0.1:9464` or `:9464`):
/// `GET /metrics`, `GET /healthz` (the process answers), `GET /readyz`
/// (the database answered recently). One thread, one request per
/// connection: scrapes are rare and tiny, so simplicity wins.
public final class MetricsServer: Sendable {
    public struct Response: Sendable {
        var status: Int
        var contentType = "text/plain; charset=utf-8"
        var body: String
    }

    private let listener: Int32
    public let port: Int
    private let stopped = Atomic<Bool>(false)

    /// Binds at once, so a wrong address fails at start-up with a clear error.
    public init(address: String, route: @escaping @Sendable (String) -> Response) throws(ConfigurationError) {
        let (host, port) = try Self.parse(address)
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketDescriptor >= 0 else { throw ConfigurationError("PGPUSH_METRICS_ADDR: cannot open a socket") }
        var yes: Int32 = 1
        setsockopt(socketDescriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(socketDescriptor)
            throw ConfigurationError("PGPUSH_METRICS_ADDR: \(host) is not an IPv4 address")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(socketDescriptor, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(socketDescriptor)
            throw ConfigurationError("PGPUSH_METRICS_ADDR: cannot listen on \(host):\(port): \(reason)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketDescriptor, $0, &length) }
        }
        listener = socketDescriptor
        self.port = Int(UInt16(bigEndian: actual.sin_port))
        let thread = Thread { [self] in
            while !stopped.load(ordering: .relaxed) {
                let client = accept(listener, nil, nil)
                if client < 0 { if errno == EINTR { continue } else { break } }
                Self.serve(client, route: route)
            }
        }
        thread.name = "pgpush-metrics"
        thread.start()
    }

    public func stop() {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    static func parse(_ address: String) throws(ConfigurationError) -> (host: String, port: Int) {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
              (0...65535).contains(port) else {
            throw ConfigurationError("PGPUSH_METRICS_ADDR must be HOST:PORT or :PORT, got \"\(address)\"")
        }
        var host = String(address[..<colon])
        if host.isEmpty { host = "0.0.0.0" }
        if host == "localhost" { host = "127.0.0.1" }
        return (host, port)
    }

    private static func serve(_ client: Int32, route: @Sendable (String) -> Response) {
        defer { close(client) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 2048)
        while request.count < 8192 {
            let count = read(client, &buffer, buffer.count)
            guard count > 0 else { break }
            request += buffer[0..<count]
            if request.count >= 4, request.suffix(4) == [13, 10, 13, 10] { break }
        }
        let firstLine = String(decoding: request.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
        let parts = firstLine.split(separator: " ")
        let response: Response
        if parts.count >= 2, parts[0] == "GET" {
            response = route(String(parts[1].split(separator: "?").first ?? ""))
        } else {
            response = Response(status: 405, body: "only GET\n")
        }
        let reason = [200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"][response.status] ?? "Status"
        let body = Array(response.body.utf8)
        let head = "HTTP/1.1 \(response.status) \(reason)\r\nContent-Type: \(response.contentType)\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let bytes = Array(head.utf8) + body
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            written += count
        }
    }
}
