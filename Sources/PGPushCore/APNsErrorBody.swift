import Foundation

/// The JSON body of an APNs error answer, `{"reason": "...", "timestamp": ms}`
/// (apns-reference §4). The same JSON can arrive as GOAWAY debug data.
///
/// Parsed with pgpush's own scanner: the bytes come from the network, so any
/// input must give a result or nil, never a crash.
public struct APNsErrorBody: Equatable, Sendable {
    public let reason: String?
    /// When APNs last confirmed the token invalid (410); sent in milliseconds.
    public let timestamp: Date?

    public init(reason: String?, timestamp: Date?) {
        self.reason = reason
        self.timestamp = timestamp
    }

    /// nil when the bytes are not a JSON object.
    public static func parse(_ bytes: some Collection<UInt8>) -> APNsErrorBody? {
        guard let scanned = try? JSONScanner.scan(bytes, compacting: false, buildingValue: true),
              let root = scanned.value, case .object = root else { return nil }
        return APNsErrorBody(reason: root["reason"]?.stringValue, timestamp: root["timestamp"].flatMap(date(fromMilliseconds:)))
    }

    private static func date(fromMilliseconds value: JSONValue) -> Date? {
        // Beyond ±10^15 ms (~31,000 years) the value is nonsense, not a date.
        guard let milliseconds = value.numberValue, milliseconds.isFinite, abs(milliseconds) < 1e15 else { return nil }
        return Date(timeIntervalSince1970: milliseconds / 1000)
    }
}
