import Foundation
import PGPushCore
import Synchronization

/// Structured log lines on stderr: `time level event key=value …` (logfmt), one
/// write per line so lines from different threads never interleave.
///
/// Callers pass named fields, never whole configuration values, so keys,
/// JWTs and passwords have no way into a line.
package struct Log: Sendable {
    package enum Level: String, Sendable { case debug, info, warning, error }

    private let minimum: Level
    private let sink: @Sendable (String) -> Void

    package init(minimum: Level = .info, sink: @escaping @Sendable (String) -> Void = Log.standardError) {
        self.minimum = minimum
        self.sink = sink
    }

    package static let standardError: @Sendable (String) -> Void = { line in
        StandardStreams.writeError(line)
    }

    package func debug(_ event: String, _ fields: KeyValuePairs<String, Any> = [:]) { write(.debug, event, fields) }
    package func info(_ event: String, _ fields: KeyValuePairs<String, Any> = [:]) { write(.info, event, fields) }
    package func warning(_ event: String, _ fields: KeyValuePairs<String, Any> = [:]) { write(.warning, event, fields) }
    package func error(_ event: String, _ fields: KeyValuePairs<String, Any> = [:]) { write(.error, event, fields) }

    /// For callers that build the fields at run time (`RepeatedWarnings` adds its counts).
    func warning(_ event: String, _ fields: [(key: String, value: Any)]) { write(.warning, event, fields) }
    func info(_ event: String, _ fields: [(key: String, value: Any)]) { write(.info, event, fields) }

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

    /// The most bytes of one value a line shows; the rest is cut and its size said. A reason,
    /// an error body or a GOAWAY's debug data comes from the network: without a bound one
    /// answer makes a line of megabytes, once per attempt.
    package static let maxValueBytes = 1024

    /// Values with blanks, quotes or any character that is not plainly printable (C0 and C1
    /// controls, DEL, the line and paragraph separators) are quoted and escaped, so a hostile
    /// token or reason cannot forge a log line or drive a terminal; values are cut at
    /// `maxValueBytes`.
    static func quoted(_ value: String) -> String {
        var value = value
        if value.utf8.count > maxValueBytes {
            let total = value.utf8.count
            let head = Array(value.utf8.prefix(maxValueBytes + 1))
            // Back to the start of a character: UTF-8 continuation bytes are 0b10xxxxxx.
            var end = maxValueBytes
            while end > 0 && head[end] & 0xC0 == 0x80 { end -= 1 }
            value = String(decoding: head[..<end], as: UTF8.self) + "…(\(total) bytes)"
        }
        let needsQuotes = value.isEmpty || value.unicodeScalars.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.isHiddenInText }
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
                if scalar.isHiddenInText {
                    escaped += String(format: "\\u%04x", scalar.value)
                } else {
                    escaped.unicodeScalars.append(scalar)
                }
            }
        }
        return escaped + "\""
    }
}
