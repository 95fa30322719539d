import PGPushCore

/// Text that is already HTML. Pages are built from these only: a value from a row or an
/// answer becomes HTML through `HTML(text:)`, which escapes it, so no path from the
/// database to the page skips escaping.
package struct HTML: Sendable, Equatable, ExpressibleByStringLiteral, CustomStringConvertible {
    package private(set) var markup: String

    /// Markup written in pgpush's own source (a literal, never a value read at run time).
    package init(stringLiteral markup: StaticString) { self.markup = "\(markup)" }

    private init(markup: String) { self.markup = markup }

    /// A value shown as text: `<`, `>`, `&`, quotes escaped; control characters shown as
    /// `\u{…}` escapes, so a reason holding a terminal escape or a NUL reads as what it is;
    /// past `limit` characters the rest is left out and the full length said.
    package init(text: some StringProtocol, limit: Int = 2_000) {
        var markup = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit { break }
            count += 1
            switch scalar {
            case "<": markup += "&lt;"
            case ">": markup += "&gt;"
            case "&": markup += "&amp;"
            case "\"": markup += "&quot;"
            case "'": markup += "&#39;"
            case _ where scalar.isHiddenInText || scalar.properties.generalCategory == .format:
                // Besides what the log escapes, format characters (bidi overrides, zero-width
                // joiners and spaces): on a page they reorder or hide what is next to them.
                markup += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: markup.unicodeScalars.append(scalar)
            }
        }
        if count == limit {
            let total = text.unicodeScalars.count
            if total > limit { markup += "<span class=\"cut\">… (\(total) characters)</span>" }
        }
        self.markup = markup
    }

    /// A number with thousands separators (`1,234,567`).
    package init(count: Int) { self.markup = Self.grouped(count) }

    package static func grouped(_ count: Int) -> String {
        let digits = String(count.magnitude)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out += "," }
            out.append(digit)
        }
        return (count < 0 ? "-" : "") + out
    }

    package var description: String { markup }

    package static func + (left: HTML, right: HTML) -> HTML { HTML(markup: left.markup + right.markup) }

    package static func += (left: inout HTML, right: HTML) { left.markup += right.markup }

    package static func joined(_ parts: [HTML], separator: HTML = "") -> HTML {
        HTML(markup: parts.map(\.markup).joined(separator: separator.markup))
    }

    /// `<tag attributes>content</tag>` with attribute values escaped.
    package static func element(_ tag: StaticString, _ attributes: KeyValuePairs<StaticString, String> = [:], _ content: HTML = "") -> HTML {
        var markup = "<\(tag)"
        for (name, value) in attributes { markup += " \(name)=\"\(HTML(text: value, limit: Int.max).markup)\"" }
        return HTML(markup: markup + ">" + content.markup + "</\(tag)>")
    }

    /// A void element (`<input …>`), attribute values escaped.
    package static func void(_ tag: StaticString, _ attributes: KeyValuePairs<StaticString, String>) -> HTML {
        var markup = "<\(tag)"
        for (name, value) in attributes { markup += " \(name)=\"\(HTML(text: value, limit: Int.max).markup)\"" }
        return HTML(markup: markup + ">")
    }

    /// Markup the chart builds from numbers it computed itself (coordinates, never text).
    static func drawn(_ markup: String) -> HTML { HTML(markup: markup) }
}

/// Percent-encoding for a value put in a link's query (`/failures?app=…`).
package func queryEncoded(_ value: String) -> String {
    var out = ""
    for byte in value.utf8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
            out.unicodeScalars.append(Unicode.Scalar(byte))
        default:
            out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
        }
    }
    return out
}
