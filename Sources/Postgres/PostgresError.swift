import CLibPQ
import Foundation

/// A failure reported by libpq or by the PostgreSQL server.
///
/// Server errors carry the SQLSTATE and, for constraint violations, the
/// constraint's name: pgpush names its constraints so that the name says what
/// was wrong with the row.
package struct PostgresError: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// Could not connect, or the connection broke (server restart, network).
        case connection
        /// The server rejected the statement.
        case server
    }

    package let kind: Kind
    package let message: String
    /// Five-character SQLSTATE (e.g. `23514` check violation), when the server sent one.
    package let sqlState: String?
    package let constraint: String?
    package let detail: String?

    package init(kind: Kind, message: String, sqlState: String? = nil, constraint: String? = nil, detail: String? = nil) {
        self.kind = kind
        // libpq's connection errors may quote the connection string, password included.
        self.message = ConnectionString.redact(message)
        self.sqlState = sqlState
        self.constraint = constraint
        self.detail = detail.map { ConnectionString.redact($0) }
    }

    /// True when retrying on a fresh connection may succeed (connection lost, server shutting down or starting).
    package var isConnectionProblem: Bool {
        if kind == .connection { return true }
        guard let sqlState else { return false }
        // Class 08: connection exception; 57P01–57P03: admin shutdown, crash shutdown, cannot connect now.
        return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(sqlState)
    }

    /// Whether the statement was refused for the values it carried (a value out of range or
    /// unstorable, a constraint, a trigger's exception): sent again unchanged it fails again,
    /// while the same statement with other values may not. Classes 22 (data exception), 23
    /// (integrity constraint violation), 2F and 39 (function exceptions), 54 (a program limit
    /// such as a value too long) and P0 (raised by PL/pgSQL). Everything else — connection
    /// trouble, timeouts, locks, permissions, a read-only server — is the database's state.
    package var refusesTheValues: Bool {
        guard kind == .server, let sqlState, sqlState.count == 5 else { return false }
        return ["22", "23", "2F", "39", "54", "P0"].contains(String(sqlState.prefix(2)))
    }

    /// SQLSTATE 22021, what PostgreSQL answers for a NUL in text.
    package static let characterNotInRepertoire = "22021"
    /// SQLSTATE 57014: `statement_timeout` (or a cancel) ended the statement.
    package static let queryCanceled = "57014"
    package static let undefinedPreparedStatement = "26000"
    package static let duplicatePreparedStatement = "42P05"
    package static let featureNotSupported = "0A000"

    package var description: String {
        var text = "PostgreSQL error"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if let constraint { text += " (constraint \(constraint))" }
        if let detail { text += " — \(detail)" }
        return text
    }

    static func fromResult(_ result: OpaquePointer, connection: OpaquePointer) -> PostgresError {
        func field(_ code: Int32) -> String? {
            guard let value = PQresultErrorField(result, code) else { return nil }
            return String(cString: value)
        }
        let primary = field(Int32(UInt8(ascii: "M"))) ?? Self.connectionMessage(connection)
        let state = field(Int32(UInt8(ascii: "C")))
        let isServerError = state != nil && PQstatus(connection) == CONNECTION_OK
        return PostgresError(
            kind: isServerError ? .server : .connection,
            message: primary,
            sqlState: state,
            constraint: field(Int32(UInt8(ascii: "n"))),
            detail: field(Int32(UInt8(ascii: "D")))
        )
    }

    static func connectionMessage(_ connection: OpaquePointer?) -> String {
        guard let connection, let raw = PQerrorMessage(connection) else { return "unknown libpq error" }
        let text = String(cString: raw).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "unknown libpq error" : text
    }
}

