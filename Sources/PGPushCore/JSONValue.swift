/// A parsed JSON value, built only where pgpush has to look inside JSON (the
/// background-push rule, APNs error bodies, and the simulator reading JWT
/// headers and claims). Numbers keep their text so nothing is lost to floating
/// point; duplicate object keys keep the last value, as PostgreSQL's jsonb does.
package enum JSONValue: Equatable, Sendable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(String)
    case bool(Bool)
    case null

    /// Parses one JSON text (RFC 8259, nesting up to 64); nil when it is not valid.
    /// Never crashes on any input.
    package static func parse(_ bytes: some Collection<UInt8>) -> JSONValue? {
        try? JSONScanner.scan(bytes, compacting: false, buildingValue: true).value
    }

    /// The member named `key` when this is an object.
    package subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// The numeric value, for comparisons only (never used to re-serialize).
    package var numberValue: Double? {
        guard case .number(let text) = self else { return nil }
        return Double(text)
    }

    /// The value as an exact integer, when the number text is one (`1700000000`, not `1.5` or `1e3`).
    package var integerValue: Int64? {
        guard case .number(let text) = self else { return nil }
        return Int64(text)
    }

    package var stringValue: String? {
        guard case .string(let text) = self else { return nil }
        return text
    }
}
