/// One HTTP header field. `neverIndex` asks HPACK never to add it to a compression table
/// (RFC 7541 §7.1.3), for values such as bearer tokens that an attacker could probe.
///
/// Its description leaves out an `authorization` value, so credentials never reach a log line,
/// and shows the never-index flag, which decides how the field is compressed.
package struct HeaderField: Sendable, Hashable, CustomStringConvertible {
    package var name: String
    package var value: String
    package var neverIndex: Bool

    package init(_ name: String, _ value: String, neverIndex: Bool = false) {
        self.name = name
        self.value = value
        self.neverIndex = neverIndex
    }

    package var description: String {
        let shown = name.lowercased() == "authorization" ? "<redacted>" : value
        return neverIndex ? "\(name): \(shown) (never indexed)" : "\(name): \(shown)"
    }
}

extension Array where Element == HeaderField {
    /// The first value of the field called `name` (names compare case-insensitively).
    package func value(of name: String) -> String? {
        let wanted = name.lowercased()
        return first { $0.name.lowercased() == wanted }?.value
    }
}
