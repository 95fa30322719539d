import CLibPQ
import Foundation

/// Checks on a libpq connection string before it is used, and the one rule that keeps
/// its password out of every message.
package enum ConnectionString {
    /// Options libpq reads as integers; a bad one fails every connection attempt, so a
    /// worker would retry it for ever. `port` may list one port per host.
    private static let integerOptions: Set<String> = [
        "port", "connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
        "tcp_user_timeout",
    ]

    /// Throws when libpq cannot parse `conninfo` (keyword/value form or URI), or when an
    /// integer option is not a number. The empty string is valid: libpq then reads the
    /// PG* environment variables.
    package static func validate(_ conninfo: String) throws(ConnectionStringError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            let message = errorMessage.map { String(cString: $0) } ?? "out of memory"
            if let errorMessage { PQfreemem(errorMessage) }
            throw ConnectionStringError(redact(message.trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            let name = String(cString: keyword)
            if integerOptions.contains(name), let raw = option.pointee.val {
                let value = String(cString: raw)
                let parts = name == "port" ? value.split(separator: ",", omittingEmptySubsequences: false).map(String.init) : [value]
                for part in parts where !part.isEmpty && Int(part.trimmingCharacters(in: .whitespaces)) == nil {
                    throw ConnectionStringError("invalid integer value \"\(redact(part))\" for connection option \"\(name)\"")
                }
            }
            option += 1
        }
    }

    /// `text` with every password a connection string can carry replaced by `***`: the
    /// userinfo of a URI (`user:secret@`, also when the scheme's colon is missing),
    /// `password=…` in keyword form (quoted or not) and the value of PGPASSWORD. libpq
    /// echoes the string it could not parse, so every message that may hold one passes here.
    package static func redact(_ text: String,
                              environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        var result = text
        for (pattern, template) in redactions {
            result = pattern.stringByReplacingMatches(in: result, range: NSRange(result.startIndex..., in: result),
                                                      withTemplate: template)
        }
        if let password = environment["PGPASSWORD"], !password.isEmpty {
            result = result.replacingOccurrences(of: password, with: "***")
        }
        return result
    }

    private static let redactions: [(NSRegularExpression, String)] = [
        // user:secret@ after "//" (postgresql://, or postgresql// with the colon forgotten).
        (try! NSRegularExpression(pattern: #"(//[^\s:/@"']*:)[^\s@"']*@"#), "$1***@"),
        // password=secret, password = 'with spaces', password="…" (keyword form, URI query).
        (try! NSRegularExpression(pattern: #"(password\s*=\s*)('(?:[^'\\]|\\.)*'?|"[^"]*"?|[^\s&"']+)"#,
                                  options: [.caseInsensitive]), "$1***"),
    ]
}

/// A connection string libpq cannot use; the message never holds its password.
package struct ConnectionStringError: Error, Sendable, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
