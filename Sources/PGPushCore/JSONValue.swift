/// A parsed JSON value, built only where pgpush has to look inside JSON (the
/// background-push rule, APNs error bodies). Numbers keep their text so nothing
/// is lost to floating point; duplicate object keys keep the last value, as
/// PostgreSQL's jsonb does.
enum JSONValue: Equatable, Sendable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(String)
    case bool(Bool)
    case null

    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// The numeric value, for comparisons only (never used to re-serialize).
    var numberValue: Double? {
        guard case .number(let text) = self else { return nil }
        return Double(text)
    }

    var stringValue: String? {
        guard case .string(let text) = self else { return nil }
        return text
    }
}
