import Foundation
import PGPushCore

/// The JSON body of an APNs error answer, `{"reason": "...", "timestamp": ms}`.
/// The same JSON can arrive as GOAWAY debug data.
///
/// Parsed with pgpush's own scanner: the bytes come from the network, so any
/// input must give a result or nil, never a crash.
package struct APNsErrorBody: Equatable, Sendable {
    package let reason: String?
    /// When APNs last confirmed the token invalid (410); sent in milliseconds.
    package let timestamp: Date?

    package init(reason: String?, timestamp: Date?) {
        self.reason = reason
        self.timestamp = timestamp
    }

    /// nil when the bytes are not a JSON object.
    package static func parse(_ bytes: some Collection<UInt8>) -> APNsErrorBody? {
        guard let root = JSONValue.parse(bytes), case .object = root else { return nil }
        return APNsErrorBody(reason: root["reason"]?.stringValue, timestamp: root["timestamp"].flatMap(date(fromMilliseconds:)))
    }

    /// The JSON APNs would send: `{"reason":"…","timestamp":ms}`, each field only
    /// when set (for the simulator and tests).
    package func encoded() -> [UInt8] {
        var members: [String] = []
        if let reason { members.append("\"reason\":" + JSONText.quoted(reason)) }
        if let timestamp {
            let milliseconds = (timestamp.timeIntervalSince1970 * 1000).rounded()
            if let whole = Int64(exactly: milliseconds) { members.append("\"timestamp\":\(whole)") }
        }
        return Array("{\(members.joined(separator: ","))}".utf8)
    }

    private static func date(fromMilliseconds value: JSONValue) -> Date? {
        // Beyond ±10^15 ms (~31,000 years) the value is nonsense, not a date.
        guard let milliseconds = value.numberValue, milliseconds.isFinite, abs(milliseconds) < 1e15 else { return nil }
        return Date(timeIntervalSince1970: milliseconds / 1000)
    }
}
