import Foundation

/// A value sent as a statement parameter, in PostgreSQL's text format.
///
/// pgpush sends every value as a parameter, never spliced into SQL. Arrays use
/// PostgreSQL's array literal syntax so a whole batch travels as one parameter
/// (`unnest($1::bigint[], …)`).
package protocol PostgresParameter: Sendable {
    var postgresText: String { get }
}

extension String: PostgresParameter { package var postgresText: String { self } }
extension Int: PostgresParameter { package var postgresText: String { String(self) } }
extension Int64: PostgresParameter { package var postgresText: String { String(self) } }
extension Int32: PostgresParameter { package var postgresText: String { String(self) } }
extension Int16: PostgresParameter { package var postgresText: String { String(self) } }
extension Bool: PostgresParameter { package var postgresText: String { self ? "t" : "f" } }
extension Double: PostgresParameter { package var postgresText: String { String(self) } }
// PostgreSQL reads uuid text in either case: Foundation's uppercase string as it is, one
// string per value rather than two.
extension UUID: PostgresParameter { package var postgresText: String { uuidString } }

/// Elements of an array parameter: how one element is written inside `{…}`.
package protocol PostgresArrayElement: Sendable {
    func appendArrayElement(to text: inout String)
}

extension Int: PostgresArrayElement { package func appendArrayElement(to text: inout String) { text += String(self) } }
extension Int64: PostgresArrayElement { package func appendArrayElement(to text: inout String) { text += String(self) } }
extension Int32: PostgresArrayElement { package func appendArrayElement(to text: inout String) { text += String(self) } }
extension Double: PostgresArrayElement { package func appendArrayElement(to text: inout String) { text += String(self) } }
extension Bool: PostgresArrayElement { package func appendArrayElement(to text: inout String) { text += self ? "t" : "f" } }
extension UUID: PostgresArrayElement { package func appendArrayElement(to text: inout String) { text += uuidString } }

extension String: PostgresArrayElement {
    /// Always quoted, so empty strings, `NULL`, commas and braces stay data.
    package func appendArrayElement(to text: inout String) {
        text.append("\"")
        for scalar in unicodeScalars {
            if scalar == "\"" || scalar == "\\" { text.append("\\") }
            text.unicodeScalars.append(scalar)
        }
        text.append("\"")
    }
}

extension Optional: PostgresArrayElement where Wrapped: PostgresArrayElement {
    package func appendArrayElement(to text: inout String) {
        switch self {
        case .none: text += "NULL"
        case .some(let value): value.appendArrayElement(to: &text)
        }
    }
}

extension Array: PostgresParameter where Element: PostgresArrayElement {
    package var postgresText: String {
        var text = "{"
        text.reserveCapacity(count * 8 + 2)
        // Reached through `any PostgresParameter`, so this runs unspecialised: a plain index
        // loop, because `enumerated()` looked up tuple metadata for every element.
        for index in 0..<count {
            if index > 0 { text.append(",") }
            self[index].appendArrayElement(to: &text)
        }
        text.append("}")
        return text
    }
}
