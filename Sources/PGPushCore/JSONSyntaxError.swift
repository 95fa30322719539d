/// Where and why JSON text is not valid RFC 8259 JSON (or exceeds the nesting limit).
package struct JSONSyntaxError: Error, Equatable, Sendable, CustomStringConvertible {
    enum Kind: Equatable, Sendable {
        case empty
        case unexpectedEnd
        case unexpectedByte
        case invalidUTF8
        case controlCharacterInString
        case invalidEscape
        case invalidNumber
        case nestingTooDeep
        case trailingContent
    }

    let kind: Kind
    /// Byte offset in the input where the problem was found.
    let offset: Int

    package var description: String {
        let what = switch kind {
        case .empty: "empty input"
        case .unexpectedEnd: "unexpected end of input"
        case .unexpectedByte: "unexpected character"
        case .invalidUTF8: "invalid UTF-8"
        case .controlCharacterInString: "unescaped control character in string"
        case .invalidEscape: "invalid escape sequence"
        case .invalidNumber: "invalid number"
        case .nestingTooDeep: "nesting too deep"
        case .trailingContent: "content after the JSON value"
        }
        return "\(what) at byte \(offset)"
    }
}
