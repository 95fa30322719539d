/// One HTTP header field. `neverIndex` asks HPACK never to add it to a compression table
/// (RFC 7541 §7.1.3), for values such as bearer tokens that an attacker could probe.
///
/// Its description leaves out an `authorization` value, so credentials never reach a log line.
public struct HeaderField: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var value: String
    public var neverIndex: Bool

    public init(_ name: String, _ value: String, neverIndex: Bool = false) {
        self.name = name
        self.value = value
        self.neverIndex = neverIndex
    }

    public var description: String {
        name.lowercased() == "authorization" ? "\(name): <redacted>" : "\(name): \(value)"
    }
}

extension Array where Element == HeaderField {
    /// The first value of the field called `name` (names compare case-insensitively).
    public func value(of name: String) -> String? {
        let wanted = name.lowercased()
        return first { $0.name.lowercased() == wanted }?.value
    }
}
