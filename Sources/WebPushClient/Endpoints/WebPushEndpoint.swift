/// A subscription's endpoint URL, read as an untrusted value: it comes from a browser, through
/// any user who can call the application's subscribe API, and names the host the worker will
/// call. Only `https` URLs with a plain host are read; anything else is refused with a reason.
package struct WebPushEndpoint: Sendable, Equatable {
    /// Longer endpoints than any push service issues are refused (Windows' carry a token in
    /// the query, a few hundred characters).
    package static let longest = 2048

    package let origin: PushServiceOrigin
    /// The request target: the path and query after the origin (`/` when empty).
    package let target: String

    package init(_ text: String) throws(EndpointRefusal) {
        guard text.utf8.count <= Self.longest else { throw .init("endpoint longer than \(Self.longest) bytes") }
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw .init("endpoint with spaces, control or non-ASCII characters")
        }
        guard text.lowercased().hasPrefix("https://") else { throw .init("endpoint not an https URL") }
        let rest = text.dropFirst("https://".count)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let target = rest[authorityEnd...]
        guard !target.contains("#") else { throw .init("endpoint with a fragment") }
        guard !authority.contains("@") else { throw .init("endpoint with a user name") }
        let host: Substring, portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .init("endpoint with an unclosed IPv6 literal") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { throw .init("endpoint with characters after its IPv6 literal") }
            portText = after.isEmpty ? nil : after.dropFirst()
            guard case .v6 = IPAddress(String(host)) else { throw .init("endpoint with an invalid IPv6 literal") }
        } else {
            let colon = authority.firstIndex(of: ":")
            host = authority[..<(colon ?? authority.endIndex)]
            portText = colon.map { authority[authority.index(after: $0)...] }
            guard Self.isHostName(host) || IPAddress(String(host)) != nil else { throw .init("endpoint with an invalid host") }
        }
        var port = 443
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number), portText.allSatisfy(\.isASCII) else {
                throw .init("endpoint with an invalid port")
            }
            port = number
        }
        origin = PushServiceOrigin(host: String(host), port: port)
        self.target = target.isEmpty ? "/" : String(target)
    }

    /// Letters, digits and `-` in dot-separated labels of 1-63 characters, not starting or
    /// ending with `-`, at most 253 characters.
    static func isHostName(_ host: Substring) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        return host.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                && label.utf8.allSatisfy { byte in
                    (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7a) || byte == 0x2d
                }
        }
    }
}

/// Why a subscription's endpoint is not sent to: the row fails `EndpointNotAllowed` with it,
/// before any connection.
package struct EndpointRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    package static let reason = "EndpointNotAllowed"
    package let detail: String

    init(_ detail: String) {
        self.detail = detail
    }

    package var description: String { "\(Self.reason): \(detail)" }
}
