import Foundation

/// One request as the server read it: the method, the path and query of its target,
/// its header fields and its body (empty without `Content-Length`).
package struct HTTPRequest: Sendable, Equatable {
    package var method: String
    /// The target's path, still percent-encoded (`/notifications/42`).
    package var path: String
    /// The target's query, decoded: `?app=shop&app=news` gives two pairs, in order.
    package var query: [(name: String, value: String)]
    /// Field names lower-cased.
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package init(method: String, path: String, query: [(name: String, value: String)] = [],
                 headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    package static func == (left: HTTPRequest, right: HTTPRequest) -> Bool {
        left.method == right.method && left.path == right.path && left.body == right.body
            && left.query.elementsEqual(right.query) { $0 == $1 }
            && left.headers.elementsEqual(right.headers) { $0 == $1 }
    }

    /// The first value of a header field (name in any case).
    package func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name == lowered }?.value
    }

    /// The first value of a query parameter; nil when absent.
    package func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// The body's fields when it is `application/x-www-form-urlencoded` (what an HTML form
    /// posts); empty otherwise.
    package var form: [(name: String, value: String)] {
        guard header("content-type")?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else { return [] }
        return Self.decodeForm(String(decoding: body, as: UTF8.self))
    }

    /// `a=1&b=x+y%21` → [("a", "1"), ("b", "x y!")]; pairs without `=` have an empty value;
    /// bytes that are not UTF-8 after decoding become U+FFFD.
    package static func decodeForm(_ text: some StringProtocol) -> [(name: String, value: String)] {
        text.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (percentDecoded(parts[0]), parts.count > 1 ? percentDecoded(parts[1]) : "")
        }
    }

    /// Percent-decoding with `+` as a space; a `%` not followed by two hex digits stays as it is.
    package static func percentDecoded(_ text: some StringProtocol) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(text.utf8)
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), index + 2 < utf8.count,
                      let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2]) {
                bytes.append(high << 4 | low)
                index += 2
            } else {
                bytes.append(byte)
            }
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// What a request head says, or why it cannot be answered.
    enum Head: Equatable {
        case request(method: String, target: String, headers: [(name: String, value: String)], contentLength: Int)
        case refused(status: Int, message: String)

        static func == (left: Head, right: Head) -> Bool {
            switch (left, right) {
            case let (.request(m1, t1, h1, c1), .request(m2, t2, h2, c2)):
                m1 == m2 && t1 == t2 && c1 == c2 && h1.elementsEqual(h2) { $0 == $1 }
            case let (.refused(s1, m1), .refused(s2, m2)): s1 == s2 && m1 == m2
            default: false
            }
        }
    }

    /// Reads a head (request line and fields, without the blank line).
    static func parseHead(_ bytes: ArraySlice<UInt8>) -> Head {
        let lines = String(decoding: bytes, as: UTF8.self).split(omittingEmptySubsequences: true) { $0 == "\r\n" || $0 == "\n" || $0 == "\r" }
        guard let first = lines.first else { return .refused(status: 400, message: "not an HTTP request") }
        let parts = first.split(separator: " ")
        guard parts.count >= 2 else { return .refused(status: 400, message: "not an HTTP request") }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return .refused(status: 400, message: "a header field without a colon") }
            headers.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        if headers.contains(where: { $0.name == "transfer-encoding" }) {
            return .refused(status: 411, message: "send the body with Content-Length")
        }
        let lengths = headers.filter { $0.name == "content-length" }.map(\.value)
        var contentLength = 0
        if let length = lengths.first {
            guard Set(lengths).count == 1, let value = Int(length), value >= 0 else {
                return .refused(status: 400, message: "Content-Length is not one number")
            }
            contentLength = value
        }
        return .request(method: String(parts[0]), target: String(parts[1]), headers: headers, contentLength: contentLength)
    }

    /// A request from its head's parts and its body.
    init(method: String, target: String, headers: [(name: String, value: String)], body: [UInt8]) {
        let pieces = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        self.init(method: method, path: String(pieces.first ?? ""),
                  query: pieces.count > 1 ? Self.decodeForm(pieces[1]) : [], headers: headers, body: body)
    }
}

/// One response: status, content type, extra header fields and body. Every response
/// closes its connection.
package struct HTTPResponse: Sendable, Equatable {
    package var status: Int
    package var contentType: String
    package var headers: [HTTPHeaderField]
    package var body: [UInt8]

    package init(status: Int, contentType: String = "text/plain; charset=utf-8", headers: [HTTPHeaderField] = [], body: String) {
        self.init(status: status, contentType: contentType, headers: headers, bytes: Array(body.utf8))
    }

    package init(status: Int, contentType: String, headers: [HTTPHeaderField] = [], bytes: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = bytes
    }

    static let reasons = [200: "OK", 303: "See Other", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
                          405: "Method Not Allowed", 408: "Request Timeout", 411: "Length Required", 413: "Content Too Large", 421: "Misdirected Request",
                          431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable"]

    /// The bytes on the wire. Field values with CR or LF are dropped, never sent.
    var encoded: [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.reasons[status] ?? "Status")\r\nContent-Type: \(contentType)\r\n"
        for field in headers where !(field.name + field.value).unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" }) {
            head += "\(field.name): \(field.value)\r\n"
        }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }
}

package struct HTTPHeaderField: Sendable, Equatable {
    package var name: String
    package var value: String

    package init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}
