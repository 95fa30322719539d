import Foundation
import Glibc

/// A blocking HTTP/1.1 client for servers on 127.0.0.1 (chromedriver, `pgpush web`): one
/// request per connection (`Connection: close`), the whole answer read until the server
/// closes, a chunked body decoded.
package enum PlainHTTP {
    package struct Answer: Sendable {
        package var status: Int
        /// Field names lower-cased.
        package var headers: [String: String]
        package var body: [UInt8]
        package var text: String { String(decoding: body, as: UTF8.self) }
    }

    package static func request(_ method: String, port: Int, path: String, headers: [String: String] = [:], body: [UInt8] = [],
                                timeout: Duration = .seconds(120)) throws -> Answer {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestSetupError("socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let seconds = timeout.components.seconds
        var limit = timeval(tv_sec: Int(max(seconds, 1)), tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TestSetupError("connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))") }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "DELETE" { head += "Content-Length: \(body.count)\r\n" }
        let request = Array((head + "\r\n").utf8) + body
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw TestSetupError("send to 127.0.0.1:\(port): \(String(cString: strerror(errno)))") }
            sent += count
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw TestSetupError("read from 127.0.0.1:\(port): \(String(cString: strerror(errno))) after \(received.count) bytes")
            }
            received += buffer[0..<count]
            // Some servers (chromedriver) keep the connection after a complete answer.
            if let answer = try? parse(received), let length = answer.headers["content-length"].flatMap(Int.init),
               answer.body.count >= length { return answer }
        }
        return try parse(received)
    }

    /// `request` with a JSON body and a JSON answer (what WebDriver speaks).
    package static func json(_ method: String, port: Int, path: String, _ object: Any? = nil) throws -> (status: Int, value: Any?) {
        let body = try object.map { try JSONSerialization.data(withJSONObject: $0) }.map { [UInt8]($0) } ?? []
        let answer = try request(method, port: port, path: path,
                                 headers: body.isEmpty ? [:] : ["Content-Type": "application/json; charset=utf-8"], body: body)
        let parsed = answer.body.isEmpty ? nil : try? JSONSerialization.jsonObject(with: Data(answer.body))
        return (answer.status, (parsed as? [String: Any])?["value"])
    }

    static func parse(_ bytes: [UInt8]) throws -> Answer {
        guard let end = bytes.indices.dropLast(3).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 && bytes[$0 + 2] == 13 && bytes[$0 + 3] == 10 })
        else { throw TestSetupError("no HTTP answer: \(String(decoding: bytes.prefix(200), as: UTF8.self))") }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw TestSetupError("bad status line \(lines[0])") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(bytes[(end + 4)...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = dechunked(body) }
        return Answer(status: status, headers: headers, body: body)
    }

    static func dechunked(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard let lineEnd = bytes[index...].indices.first(where: { $0 + 1 < bytes.count && bytes[$0] == 13 && bytes[$0 + 1] == 10 }),
                  let size = Int(String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";")[0]
                                    .trimmingCharacters(in: .whitespaces), radix: 16), size > 0 else { break }
            let start = lineEnd + 2
            out += bytes[start..<min(start + size, bytes.count)]
            index = start + size + 2
        }
        return out
    }
}
