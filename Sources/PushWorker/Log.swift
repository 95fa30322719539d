import Foundation
import Synchronization

/// Structured log lines on stderr: `time level event key=value …` (logfmt), one
/// write per line so lines from different threads never interleave.
///
/// Callers pass named fields, never whole configuration values, so keys,
/// JWTs and passwords have no way into a line.
public struct Log: Sendable {
    public enum Level: String, Sendable { case debug, info, warning, error }

    private let minimum: Level
    private let sink: @Sendable (String) -> Void

    public init(minimum: Level = .info, sink: @escaping @Sendable (String) -> Void = Log.standardError) {
        self.minimum = minimum
        self.sink = sink
    }

    public static let standardError: @Sendable (String) -> Void = { line in
        StandardStreams.writeError(line)
    }

    public func debug(_ event: String, _ fields: KeyValuePairs<String, Any> = [:]) { write(.debug, event, fields) }
    public func info(_ event: String, _ fields: KeyValuePairs<String, Any> = [:]) { write(.info, event, fields) }
    public func warning(_ event: String, _ fields: KeyValuePairs<String, Any> = [:]) { write(.warning, event, fields) }
    public func error(_ event: String, _ fields: KeyValuePairs<String, Any> = [:]) { write(.error, event, fields) }

    /// For callers that build the fields at run time (`RepeatedWarnings` adds its counts).
    func warning(_ event: String, _ fields: [(key: String, value: Any)]) { write(.warning, event, fields) }

    private func write(_ level: Level, _ event: String, _ fields: some Sequence<(key: String, value: Any)>) {
        guard Self.rank(level) >= Self.rank(minimum) else { return }
        var line = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
        line += " \(level.rawValue) \(event)"
        for (key, value) in fields {
            line += " \(key)=\(Self.quoted(String(describing: value)))"
        }
        sink(line + "\n")
    }

    private static func rank(_ level: Level) -> Int {
        switch level {
        case .debug: 0
        case .info: 1
        case .warning: 2
        case .error: 3
        }
    }

    /// Values with blanks, quotes or control characters are quoted and escaped,
    /// so a hostile token or reason cannot forge a log line.
    static func quoted(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.unicodeScalars.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.value < 0x20 || $0.value == 0x7F }
        guard needsQuotes else { return value }
        var escaped = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    escaped += String(format: "\\u%04x", scalar.value)
                } else {
                    escaped.unicodeScalars.append(scalar)
                }
            }
        }
        return escaped + "\""
    }
}
