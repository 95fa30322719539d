import Foundation

/// An HTTP proxy that service connections go through by `CONNECT` (RFC 9110 §9.3.6), as
/// `HTTPS_PROXY` / `https_proxy` / `--proxy` name it: `http://[user:password@]host[:port]`
/// (port 80 when left out; a bare `host:port` is taken as `http://`). Credentials go in a
/// `Proxy-Authorization: Basic` header and nowhere else: `description` shows the user and
/// hides the password. Hosts `NO_PROXY` names are connected to directly.
package struct HTTPProxy: Sendable, Equatable, CustomStringConvertible {
    package let host: String
    package let port: Int
    package let user: String?
    private let password: String?
    package let noProxy: NoProxy

    package init(url text: String, noProxy: String? = nil) throws(ProxyConfigurationError) {
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        if let scheme = rest.range(of: "://") {
            let name = rest[..<scheme.lowerBound].lowercased()
            guard name == "http" else {
                throw ProxyConfigurationError("the proxy must be an http:// URL (CONNECT over plain HTTP to the proxy), got \(name)://")
            }
            rest = rest[scheme.upperBound...]
        }
        if let slash = rest.firstIndex(of: "/") {
            guard rest[slash...].allSatisfy({ $0 == "/" }) else { throw ProxyConfigurationError("the proxy URL must have no path") }
            rest = rest[..<slash]
        }
        var user: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let parts = credentials.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.percentDecoded(parts[0]), !name.isEmpty else {
                throw ProxyConfigurationError("the proxy URL's user name is empty or badly percent-encoded")
            }
            user = name
            if parts.count == 2 {
                guard let secret = Self.percentDecoded(parts[1]) else {
                    throw ProxyConfigurationError("the proxy URL's password is badly percent-encoded")
                }
                password = secret
            }
        }
        let (host, port) = try Self.hostAndPort(rest)
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.noProxy = NoProxy(noProxy ?? "")
    }

    /// Whether a connection to `host` goes through the proxy (`NO_PROXY` does not name it).
    package func applies(to host: String) -> Bool { !noProxy.matches(host) }

    /// The `CONNECT` request for `host:port`.
    func connectRequest(host target: String, port targetPort: Int) -> [UInt8] {
        let authority = (target.contains(":") ? "[\(target)]" : target) + ":\(targetPort)"
        var request = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let user {
            let basic = Data("\(user):\(password ?? "")".utf8).base64EncodedString()
            request += "Proxy-Authorization: Basic \(basic)\r\n"
        }
        return Array((request + "\r\n").utf8)
    }

    package var description: String {
        let credentials = user.map { "\($0):***@" } ?? ""
        return "http://\(credentials)\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    private static func hostAndPort(_ text: Substring) throws(ProxyConfigurationError) -> (String, Int) {
        var host = text
        var port = 80
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw ProxyConfigurationError("the proxy's IPv6 address lacks its ]") }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let value = Int(after.dropFirst()) else {
                    throw ProxyConfigurationError("the proxy's port is not a number")
                }
                port = value
            }
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            guard let value = Int(text[text.index(after: colon)...]) else { throw ProxyConfigurationError("the proxy's port is not a number") }
            port = value
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isASCII && !$0.isWhitespace && !"/?#@".contains($0) }) else {
            throw ProxyConfigurationError("the proxy URL names no host")
        }
        guard (1...65535).contains(port) else { throw ProxyConfigurationError("the proxy's port must be 1–65535, got \(port)") }
        return (String(host), port)
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let first = utf8.index(after: index)
                guard first < utf8.endIndex, utf8.index(after: first) < utf8.endIndex,
                      let value = UInt8(String(decoding: utf8[first...utf8.index(after: first)], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
                index = utf8.index(first, offsetBy: 2)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// `NO_PROXY` as curl reads it: comma-separated host names, each matching itself and its
/// subdomains (a leading `.` or `*.` changes nothing), IP addresses matching exactly, `*`
/// matching everything; a `:port` on an entry is ignored; case does not matter.
package struct NoProxy: Sendable, Equatable {
    private let entries: [String]
    private let everything: Bool

    package init(_ text: String) {
        var entries: [String] = []
        var everything = false
        for raw in text.split(separator: ",") {
            var entry = raw.trimmingCharacters(in: .whitespaces).lowercased()
            if entry == "*" { everything = true; continue }
            if entry.hasPrefix("*.") { entry.removeFirst(2) } else if entry.hasPrefix(".") { entry.removeFirst() }
            if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") {
                entry = String(entry[entry.index(after: entry.startIndex)..<close])
            } else if entry.filter({ $0 == ":" }).count == 1, let colon = entry.firstIndex(of: ":") {
                entry = String(entry[..<colon])
            }
            if !entry.isEmpty { entries.append(entry) }
        }
        self.entries = entries
        self.everything = everything
    }

    package func matches(_ host: String) -> Bool {
        if everything { return true }
        let name = host.lowercased()
        return entries.contains { name == $0 || name.hasSuffix("." + $0) }
    }
}

/// The proxy setting cannot be used; the message says why (never the password).
package struct ProxyConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// The status of a proxy's answer to `CONNECT`, from its head (up to the blank line).
enum ProxyAnswer {
    /// The status code, or nil when the head is not an HTTP/1.x status line.
    static func status(ofHead head: [UInt8]) -> (code: Int, reason: String)? {
        guard let end = head.firstIndex(of: UInt8(ascii: "\r")) ?? head.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let line = String(decoding: head[..<end], as: UTF8.self)
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let code = Int(parts[1]) else { return nil }
        let reason = parts.count == 3 ? String(parts[2].prefix(100)).filter { $0.isASCII && !$0.isNewline } : ""
        return (code, reason)
    }

    /// The length of the head (through the blank line that ends it), nil while incomplete.
    static func headLength(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count where bytes[index] == 0x0A && bytes[index - 1] == 0x0D
            && bytes[index - 2] == 0x0A && bytes[index - 3] == 0x0D {
            return index + 1
        }
        return nil
    }
}
