/// Writing JSON text where pgpush makes it by hand (error bodies for the simulators).
package enum JSONText {
    /// `text` as a JSON string: quotes, backslashes and control characters escaped.
    package static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\u{00}"..."\u{1F}", "\u{7F}":
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

extension JSONValue {
    /// Compact JSON text of the value: numbers as their original text, object members sorted
    /// by key (an object's order carries no meaning, and one value then has one text).
    package func encoded() -> String {
        switch self {
        case .object(let members):
            let inner = members.keys.sorted().map { JSONText.quoted($0) + ":" + members[$0]!.encoded() }
            return "{" + inner.joined(separator: ",") + "}"
        case .array(let elements):
            return "[" + elements.map { $0.encoded() }.joined(separator: ",") + "]"
        case .string(let text):
            return JSONText.quoted(text)
        case .number(let text):
            return text
        case .bool(let value):
            return value ? "true" : "false"
        case .null:
            return "null"
        }
    }
}
