/// HTTP/1.1 messages (RFC 9112) for a connection whose server chose `http/1.1` in ALPN: some
/// push services speak it unless asked for h2 (Apple's web push service), others are not
/// known to speak h2 at all. One request at a time on a connection, kept alive between them;
/// the same requests, answers, bounds and deadlines as HTTP/2, so callers see no difference.
///
/// Pure: bytes in, messages out. The client engine writes requests and reads answers with
/// it; the test server reads requests and writes answers.
package enum HTTP1 {
    /// Why a message cannot be written or read.
    package enum Failure: Error, Equatable {
        /// A field, method or path holds a byte HTTP/1.1 cannot carry (CR, LF, NUL, a space in
        /// the path): written as it is, it would split the message.
        case unwritable(String)
        case malformed(String)
        case tooLarge(ResponseBound)
    }

    /// `request` as HTTP/1.1 bytes: request line, `Host`, its fields, `Content-Length`, body.
    static func request(_ request: HTTP2Request, authority: String) throws(Failure) -> [UInt8] {
        guard isToken(request.method) else { throw .unwritable("method") }
        guard !request.path.isEmpty, request.path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { throw .unwritable("path") }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256 + request.body.count)
        bytes += "\(request.method) \(request.path) HTTP/1.1\r\n".utf8
        try appendField("host", authority, to: &bytes)
        for field in request.headers {
            try appendField(field.name, field.value, to: &bytes)
        }
        bytes += "content-length: \(request.body.count)\r\n\r\n".utf8
        bytes += request.body
        return bytes
    }

    /// An answer as HTTP/1.1 bytes (the test server's side).
    static func response(status: Int, headers: [HeaderField], body: [UInt8], close: Bool) throws(Failure) -> [UInt8] {
        guard (100...999).contains(status) else { throw .unwritable("status") }
        var bytes = Array("HTTP/1.1 \(status) \(reasonPhrase(status))\r\n".utf8)
        for field in headers { try appendField(field.name, field.value, to: &bytes) }
        if close { bytes += "connection: close\r\n".utf8 }
        bytes += "content-length: \(body.count)\r\n\r\n".utf8
        bytes += body
        return bytes
    }

    private static func appendField(_ name: String, _ value: String, to bytes: inout [UInt8]) throws(Failure) {
        guard isToken(name) else { throw .unwritable("field name") }
        // Obsolete line folding and bare CR/LF/NUL would let a value start a field of its own.
        guard value.utf8.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7f) }) else { throw .unwritable("value of \(name)") }
        bytes += name.utf8
        bytes += ": ".utf8
        bytes += value.utf8
        bytes += "\r\n".utf8
    }

    /// Without the spaces and tabs around it.
    static func trimmed(_ text: some StringProtocol) -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(text.drop(while: isBlank).reversed().drop(while: isBlank).reversed())
    }

    /// RFC 9110 §5.6.2 token characters.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7a) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    private static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 410: "Gone"
        case 413: "Content Too Large"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}

/// One message read: a request (method and target) or an answer (status).
package struct HTTP1Message: Equatable {
    package var method = ""
    package var target = ""
    package var status = 0
    /// Field names in lower case, in the order they came.
    package var fields: [(name: String, value: String)] = []
    package var body: [UInt8] = []
    /// The peer will close after this message (`Connection: close`, or HTTP/1.0).
    package var closes = false

    package func value(of name: String) -> String? { fields.first { $0.name == name }?.value }

    package static func == (left: HTTP1Message, right: HTTP1Message) -> Bool {
        left.method == right.method && left.target == right.target && left.status == right.status && left.body == right.body
            && left.closes == right.closes && left.fields.map(\.name) == right.fields.map(\.name)
            && left.fields.map(\.value) == right.fields.map(\.value)
    }
}

/// Reads HTTP/1.1 messages from a byte stream as they arrive: a start line, fields, and a
/// body framed by `Content-Length` or chunked coding (an answer with neither runs to the
/// close). Interim answers (1xx) are skipped. Bounded: the head (start line and fields) and
/// the body may not pass their limits, so a peer cannot make it hold unbounded bytes.
package struct HTTP1Parser {
    package enum Kind: Sendable { case request, response }

    private enum Framing: Equatable {
        case length(Int)
        case chunked
        case untilClose
    }

    private enum Phase: Equatable {
        case head
        case body(Framing)
        /// Inside chunked coding: the next chunk's size line, or `remaining` bytes of a chunk
        /// and then its CRLF, or the trailer section.
        case chunkSize
        case chunkData(remaining: Int)
        case chunkEnd
        case trailers
    }

    package let kind: Kind
    package let maxHeadBytes: Int
    package let maxBodyBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var phase = Phase.head
    private var message = HTTP1Message()

    package init(kind: Kind, maxHeadBytes: Int, maxBodyBytes: Int) {
        self.kind = kind
        self.maxHeadBytes = maxHeadBytes
        self.maxBodyBytes = maxBodyBytes
    }

    /// Bytes read and not yet part of a message returned.
    package var hasBufferedBytes: Bool { start < buffer.count || phase != .head }

    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 65_536 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete message, or nil until more bytes come. `atEnd`: the peer closed, so
    /// an answer running to the close is complete now.
    package mutating func next(atEnd: Bool = false) throws(HTTP1.Failure) -> HTTP1Message? {
        while true {
            switch phase {
            case .head:
                guard let end = find([13, 10, 13, 10]) else {
                    if buffer.count - start > maxHeadBytes { throw .tooLarge(.headerList(limit: maxHeadBytes)) }
                    return nil
                }
                guard end - start <= maxHeadBytes else { throw .tooLarge(.headerList(limit: maxHeadBytes)) }
                let head = Array(buffer[start..<end])
                start = end + 4
                message = HTTP1Message()
                let framing = try readHead(head)
                if message.status >= 100 && message.status < 200 { continue }
                phase = .body(framing)
            case .body(.length(let length)):
                guard length <= maxBodyBytes else { throw .tooLarge(.body(limit: maxBodyBytes)) }
                guard buffer.count - start >= length else { return nil }
                message.body = Array(buffer[start..<start + length])
                start += length
                return finish()
            case .body(.untilClose):
                if buffer.count - start > maxBodyBytes { throw .tooLarge(.body(limit: maxBodyBytes)) }
                guard atEnd else { return nil }
                message.body = Array(buffer[start...])
                start = buffer.count
                message.closes = true
                return finish()
            case .body(.chunked), .chunkSize:
                guard let end = find([13, 10]) else {
                    if buffer.count - start > 1024 { throw .malformed("chunk size line too long") }
                    return nil
                }
                let line = String(decoding: buffer[start..<end], as: UTF8.self)
                start = end + 2
                let digits = HTTP1.trimmed(line.prefix { $0 != ";" })
                // Hex digits only: Int(_:radix:) would also take a sign, and a negative size.
                guard !digits.isEmpty, digits.count <= 8, digits.utf8.allSatisfy(\.isHexDigit), let size = Int(digits, radix: 16) else {
                    throw .malformed("chunk size \"\(line.prefix(20))\"")
                }
                guard message.body.count + size <= maxBodyBytes else { throw .tooLarge(.body(limit: maxBodyBytes)) }
                phase = size == 0 ? .trailers : .chunkData(remaining: size)
            case .chunkData(let remaining):
                let available = min(remaining, buffer.count - start)
                message.body += buffer[start..<start + available]
                start += available
                guard available == remaining else {
                    phase = .chunkData(remaining: remaining - available)
                    return nil
                }
                phase = .chunkEnd
            case .chunkEnd:
                guard buffer.count - start >= 2 else { return nil }
                guard buffer[start] == 13, buffer[start + 1] == 10 else { throw .malformed("chunk not followed by CRLF") }
                start += 2
                phase = .chunkSize
            case .trailers:
                // Trailer fields are read past and dropped, up to the empty line.
                guard let end = find([13, 10]) else {
                    if buffer.count - start > maxHeadBytes { throw .tooLarge(.headerList(limit: maxHeadBytes)) }
                    return nil
                }
                let empty = end == start
                start = end + 2
                if empty { return finish() }
            }
        }
    }

    private mutating func finish() -> HTTP1Message {
        phase = .head
        return message
    }

    private func find(_ pattern: [UInt8]) -> Int? {
        guard buffer.count - start >= pattern.count else { return nil }
        var index = start
        while index <= buffer.count - pattern.count {
            if buffer[index] == pattern[0] && buffer[index + 1] == pattern[1]
                && (pattern.count == 2 || (buffer[index + 2] == pattern[2] && buffer[index + 3] == pattern[3])) {
                return index
            }
            index += 1
        }
        return nil
    }

    /// Reads the start line and fields into `message`; returns how its body is framed.
    private mutating func readHead(_ head: [UInt8]) throws(HTTP1.Failure) -> Framing {
        guard head.allSatisfy({ $0 != 0 }) else { throw .malformed("NUL in the head") }
        let lines = head.split(separator: 10, omittingEmptySubsequences: false).map { line in
            String(decoding: line.last == 13 ? line.dropLast() : line[...], as: UTF8.self)
        }
        guard let first = lines.first else { throw .malformed("no start line") }
        let parts = first.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        let version: Substring
        switch kind {
        case .response:
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]),
                  (100...999).contains(status) else { throw .malformed("status line \"\(first.prefix(40))\"") }
            version = parts[0]
            message.status = status
        case .request:
            guard parts.count == 3, HTTP1.isToken(String(parts[0])), !parts[1].isEmpty, parts[2].hasPrefix("HTTP/1.") else {
                throw .malformed("request line \"\(first.prefix(40))\"")
            }
            version = parts[2]
            message.method = String(parts[0])
            message.target = String(parts[1])
        }
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), HTTP1.isToken(String(line[..<colon])) else {
                throw .malformed("field line \"\(line.prefix(40))\"")
            }
            message.fields.append((line[..<colon].lowercased(), HTTP1.trimmed(line[line.index(after: colon)...])))
        }
        let connection = message.fields.filter { $0.name == "connection" }.map { $0.value.lowercased() }
        message.closes = version == "HTTP/1.0" ? !connection.contains("keep-alive") : connection.contains("close")
        let codings = message.fields.filter { $0.name == "transfer-encoding" }.map { $0.value.lowercased() }
        let lengths = Set(message.fields.filter { $0.name == "content-length" }.map(\.value))
        if !codings.isEmpty {
            // RFC 9112 §6.3: chunked must be the last coding; with Content-Length too, the
            // message is one a proxy could read differently: refused.
            guard codings.last?.split(separator: ",").last.map(HTTP1.trimmed) == "chunked", lengths.isEmpty else {
                throw .malformed("transfer-encoding \(codings)")
            }
            return .chunked
        }
        if let length = lengths.first {
            guard lengths.count == 1, !length.isEmpty, length.utf8.allSatisfy(\.isDecimalDigit), length.count <= 18, let count = Int(length) else {
                throw .malformed("content-length \(lengths)")
            }
            return .length(count)
        }
        if kind == .request || message.status == 204 || message.status == 304 || message.status < 200 { return .length(0) }
        return .untilClose
    }
}

extension UInt8 {
    fileprivate var isDecimalDigit: Bool { self >= 0x30 && self <= 0x39 }
    fileprivate var isHexDigit: Bool { isDecimalDigit || (self | 0x20 >= 0x61 && self | 0x20 <= 0x66) }
}
