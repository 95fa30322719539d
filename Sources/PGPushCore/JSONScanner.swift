/// A validating JSON scanner (RFC 8259) that writes the compact form of its input.
///
/// Why a scanner of our own instead of JSONSerialization/JSONDecoder:
/// - the body must keep strings and numbers byte-exact as the application wrote
///   them (`1e400` and `12345678901234567890` survive; a Double round trip would
///   change them, and re-escaping strings would change the byte count that the
///   size limit is measured on);
/// - PostgreSQL's jsonb output (`{"aps": {"alert": "hi"}}`) only needs its
///   insignificant whitespace dropped, which is one pass over the bytes;
/// - hostile input must never crash or recurse without bound: nesting is capped
///   (64 by default) and every read is preceded by an explicit index check
///   (UnsafeBufferPointer does not check in release builds; the fuzz tests run
///   in debug, where it does).
///
/// Compaction copies runs of significant bytes between whitespace gaps, so the
/// hot path is a byte loop plus a few bulk appends. A `JSONValue` tree is built
/// only when asked for.
package struct JSONScanner {
    package static let defaultMaximumDepth = 64

    package struct Result {
        /// The input without insignificant whitespace; empty unless requested.
        package var compact: [UInt8]
        /// The parsed value; nil unless requested.
        package var value: JSONValue?
    }

    /// Validates `bytes` as one JSON text and returns what was requested.
    package static func scan(
        _ bytes: some Collection<UInt8>,
        compacting: Bool,
        buildingValue: Bool,
        maximumDepth: Int = defaultMaximumDepth
    ) throws(JSONSyntaxError) -> Result {
        func run(_ buffer: UnsafeBufferPointer<UInt8>) -> Swift.Result<Result, JSONSyntaxError> {
            var scanner = JSONScanner(
                input: buffer, compacting: compacting, buildingValue: buildingValue, maximumDepth: maximumDepth)
            do {
                let value = try scanner.scanDocument()
                return .success(Result(compact: scanner.output, value: value))
            } catch {
                return .failure(error)
            }
        }
        let outcome = bytes.withContiguousStorageIfAvailable(run)
            ?? Array(bytes).withUnsafeBufferPointer(run)
        return try outcome.get()
    }

    let input: UnsafeBufferPointer<UInt8>
    let compacting: Bool
    let buildingValue: Bool
    let maximumDepth: Int
    var position = 0
    var depth = 0
    /// Start of the significant bytes not yet copied to `output`.
    var pendingStart = 0
    var output: [UInt8] = []

    private init(input: UnsafeBufferPointer<UInt8>, compacting: Bool, buildingValue: Bool, maximumDepth: Int) {
        self.input = input
        self.compacting = compacting
        self.buildingValue = buildingValue
        self.maximumDepth = maximumDepth
        if compacting { output.reserveCapacity(input.count) }
    }

    mutating func scanDocument() throws(JSONSyntaxError) -> JSONValue? {
        skipWhitespace()
        guard position < input.count else {
            throw JSONSyntaxError(kind: input.isEmpty ? .empty : .unexpectedEnd, offset: position)
        }
        let value = try scanValue()
        skipWhitespace()
        guard position == input.count else { throw failure(.trailingContent) }
        flushPending()
        return value
    }

    // MARK: Values

    mutating func scanValue() throws(JSONSyntaxError) -> JSONValue? {
        guard position < input.count else { throw failure(.unexpectedEnd) }
        switch input[position] {
        case .openBrace: return try scanObject()
        case .openBracket: return try scanArray()
        case .quote:
            let text = try scanString()
            return text.map(JSONValue.string)
        case .lowercaseT:
            try scanLiteral("true")
            return buildingValue ? .bool(true) : nil
        case .lowercaseF:
            try scanLiteral("false")
            return buildingValue ? .bool(false) : nil
        case .lowercaseN:
            try scanLiteral("null")
            return buildingValue ? .null : nil
        case .minus, .digitZero ... .digitNine:
            return try scanNumber()
        default:
            throw failure(.unexpectedByte)
        }
    }

    mutating func scanObject() throws(JSONSyntaxError) -> JSONValue? {
        try enterContainer()
        position += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if peek() == .closeBrace {
            position += 1
            depth -= 1
            return buildingValue ? .object(members) : nil
        }
        while true {
            guard peek() == .quote else { throw failure(position < input.count ? .unexpectedByte : .unexpectedEnd) }
            let key = try scanString()
            skipWhitespace()
            try expect(.colon)
            skipWhitespace()
            let value = try scanValue()
            if let key, let value { members[key] = value }
            skipWhitespace()
            switch peek() {
            case .comma:
                position += 1
                skipWhitespace()
            case .closeBrace:
                position += 1
                depth -= 1
                return buildingValue ? .object(members) : nil
            case nil:
                throw failure(.unexpectedEnd)
            default:
                throw failure(.unexpectedByte)
            }
        }
    }

    mutating func scanArray() throws(JSONSyntaxError) -> JSONValue? {
        try enterContainer()
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek() == .closeBracket {
            position += 1
            depth -= 1
            return buildingValue ? .array(elements) : nil
        }
        while true {
            if let element = try scanValue() { elements.append(element) }
            skipWhitespace()
            switch peek() {
            case .comma:
                position += 1
                skipWhitespace()
            case .closeBracket:
                position += 1
                depth -= 1
                return buildingValue ? .array(elements) : nil
            case nil:
                throw failure(.unexpectedEnd)
            default:
                throw failure(.unexpectedByte)
            }
        }
    }

    mutating func enterContainer() throws(JSONSyntaxError) {
        guard depth < maximumDepth else { throw failure(.nestingTooDeep) }
        depth += 1
    }

    mutating func scanLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
        let count = literal.utf8CodeUnitCount
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for index in 0..<count {
            guard position + index < input.count else { throw JSONSyntaxError(kind: .unexpectedEnd, offset: position + index) }
            guard input[position + index] == expected[index] else {
                throw JSONSyntaxError(kind: .unexpectedByte, offset: position + index)
            }
        }
        position += count
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, kept as written.
    mutating func scanNumber() throws(JSONSyntaxError) -> JSONValue? {
        let start = position
        if peek() == .minus { position += 1 }
        switch peek() ?? 0 {
        case .digitZero:
            position += 1
        case .digitOne ... .digitNine:
            position += 1
            skipDigits()
        default:
            throw failure(.invalidNumber)
        }
        if peek() == .period {
            position += 1
            guard isDigit(peek()) else { throw failure(.invalidNumber) }
            skipDigits()
        }
        if peek() == .lowercaseE || peek() == .uppercaseE {
            position += 1
            if peek() == .plus || peek() == .minus { position += 1 }
            guard isDigit(peek()) else { throw failure(.invalidNumber) }
            skipDigits()
        }
        guard buildingValue else { return nil }
        return .number(String(decoding: UnsafeBufferPointer(rebasing: input[start..<position]), as: UTF8.self))
    }

    mutating func skipDigits() {
        while position < input.count, isDigit(input[position]) { position += 1 }
    }

    // MARK: Whitespace and compaction

    /// Skips insignificant whitespace; when compacting, first copies the
    /// significant bytes before it.
    mutating func skipWhitespace() {
        guard position < input.count, isWhitespace(input[position]) else { return }
        flushPending()
        position += 1
        while position < input.count, isWhitespace(input[position]) { position += 1 }
        pendingStart = position
    }

    mutating func flushPending() {
        guard compacting, pendingStart < position else { return }
        output.append(contentsOf: UnsafeBufferPointer(rebasing: input[pendingStart..<position]))
        pendingStart = position
    }

    // MARK: Helpers

    func peek() -> UInt8? {
        position < input.count ? input[position] : nil
    }

    mutating func expect(_ byte: UInt8) throws(JSONSyntaxError) {
        guard position < input.count else { throw failure(.unexpectedEnd) }
        guard input[position] == byte else { throw failure(.unexpectedByte) }
        position += 1
    }

    func failure(_ kind: JSONSyntaxError.Kind) -> JSONSyntaxError {
        JSONSyntaxError(kind: kind, offset: position)
    }

    func isWhitespace(_ byte: UInt8) -> Bool {
        byte == .space || byte == .newline || byte == .carriageReturn || byte == .tab
    }

    func isDigit(_ byte: UInt8?) -> Bool {
        guard let byte else { return false }
        return byte >= .digitZero && byte <= .digitNine
    }

    func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case .digitZero ... .digitNine: UInt32(byte - .digitZero)
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}

/// JSON's structural bytes, for the scanner's two files.
extension UInt8 {
    static let openBrace = UInt8(ascii: "{")
    static let closeBrace = UInt8(ascii: "}")
    static let openBracket = UInt8(ascii: "[")
    static let closeBracket = UInt8(ascii: "]")
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let slash = UInt8(ascii: "/")
    static let colon = UInt8(ascii: ":")
    static let comma = UInt8(ascii: ",")
    static let minus = UInt8(ascii: "-")
    static let plus = UInt8(ascii: "+")
    static let period = UInt8(ascii: ".")
    static let digitZero = UInt8(ascii: "0")
    static let digitOne = UInt8(ascii: "1")
    static let digitNine = UInt8(ascii: "9")
    static let lowercaseB = UInt8(ascii: "b")
    static let lowercaseE = UInt8(ascii: "e")
    static let uppercaseE = UInt8(ascii: "E")
    static let lowercaseF = UInt8(ascii: "f")
    static let lowercaseN = UInt8(ascii: "n")
    static let lowercaseR = UInt8(ascii: "r")
    static let lowercaseT = UInt8(ascii: "t")
    static let lowercaseU = UInt8(ascii: "u")
    static let space = UInt8(ascii: " ")
    static let newline = UInt8(ascii: "\n")
    static let carriageReturn = UInt8(ascii: "\r")
    static let tab = UInt8(ascii: "\t")
}
