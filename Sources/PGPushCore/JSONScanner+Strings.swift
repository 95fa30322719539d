/// Strings: escapes, UTF-8 checks, and the bytes of the decoded string.
extension JSONScanner {
    /// Validates a string (escapes, UTF-8, no raw control characters); returns its
    /// decoded text only when building values.
    mutating func scanString() throws(JSONSyntaxError) -> String? {
        position += 1
        var decoded: [UInt8] = []
        var pendingHighSurrogate: UInt32?
        while true {
            guard position < input.count else { throw failure(.unexpectedEnd) }
            let byte = input[position]
            if byte == .quote {
                position += 1
                if pendingHighSurrogate != nil { appendScalar(0xFFFD, to: &decoded) }
                return buildingValue ? String(decoding: decoded, as: UTF8.self) : nil
            }
            if byte == .backslash {
                let scalar = try scanEscape()
                guard buildingValue else { continue }
                // Pair surrogates; a lone one decodes to U+FFFD (the text is still valid JSON).
                if let high = pendingHighSurrogate {
                    pendingHighSurrogate = nil
                    if (0xDC00...0xDFFF).contains(scalar) {
                        appendScalar(0x10000 + ((high - 0xD800) << 10) + (scalar - 0xDC00), to: &decoded)
                        continue
                    }
                    appendScalar(0xFFFD, to: &decoded)
                }
                switch scalar {
                case 0xD800...0xDBFF: pendingHighSurrogate = scalar
                case 0xDC00...0xDFFF: appendScalar(0xFFFD, to: &decoded)
                default: appendScalar(scalar, to: &decoded)
                }
                continue
            }
            if pendingHighSurrogate != nil {
                pendingHighSurrogate = nil
                appendScalar(0xFFFD, to: &decoded)
            }
            if byte < 0x20 { throw failure(.controlCharacterInString) }
            if byte < 0x80 {
                position += 1
                if buildingValue { decoded.append(byte) }
                continue
            }
            let length = try utf8SequenceLength()
            if buildingValue { decoded.append(contentsOf: UnsafeBufferPointer(rebasing: input[position..<position + length])) }
            position += length
        }
    }

    /// Reads one escape starting at the backslash; returns the code unit it stands for.
    mutating func scanEscape() throws(JSONSyntaxError) -> UInt32 {
        position += 1
        guard position < input.count else { throw failure(.unexpectedEnd) }
        let letter = input[position]
        position += 1
        switch letter {
        case .quote: return 0x22
        case .backslash: return 0x5C
        case .slash: return 0x2F
        case .lowercaseB: return 0x08
        case .lowercaseF: return 0x0C
        case .lowercaseN: return 0x0A
        case .lowercaseR: return 0x0D
        case .lowercaseT: return 0x09
        case .lowercaseU:
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard position < input.count else { throw failure(.unexpectedEnd) }
                guard let digit = hexValue(input[position]) else { throw failure(.invalidEscape) }
                value = value << 4 | digit
                position += 1
            }
            return value
        default:
            position -= 1
            throw failure(.invalidEscape)
        }
    }

    /// Length of the well-formed UTF-8 sequence at `position` (Unicode Table 3-7:
    /// no overlong forms, no surrogates, nothing above U+10FFFF).
    func utf8SequenceLength() throws(JSONSyntaxError) -> Int {
        let lead = input[position]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondRange = 0x80...0x9F
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F
        default: throw failure(.invalidUTF8)
        }
        guard position + length <= input.count else { throw failure(.invalidUTF8) }
        guard secondRange.contains(input[position + 1]) else { throw failure(.invalidUTF8) }
        for index in 2..<length where !(0x80...0xBF).contains(input[position + index]) {
            throw failure(.invalidUTF8)
        }
        return length
    }

    func appendScalar(_ scalar: UInt32, to bytes: inout [UInt8]) {
        let unicodeScalar = Unicode.Scalar(scalar) ?? "\u{FFFD}"
        UTF8.encode(unicodeScalar) { bytes.append($0) }
    }
}
