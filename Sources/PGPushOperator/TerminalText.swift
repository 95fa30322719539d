/// Text from the database made safe for a terminal. An app name, a reason or a topic may
/// hold control characters that a row put there before the input rules existed (or that
/// a table outside those rules holds); written raw, `ESC [2J` clears the operator's screen
/// and other sequences recolour or retitle it. Each control character is shown as an
/// escape instead: `\e`, `\n`, `\t`, `\r`, or `\u{…}`.
enum TerminalText {
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            guard isControl(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\u{1B}": result += "\\e"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            default: result += "\\u{\(String(scalar.value, radix: 16))}"
            }
        }
        return result
    }

    /// C0, DEL and C1: everything a terminal may act on rather than print.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
