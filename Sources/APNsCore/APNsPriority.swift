/// The three `apns-priority` values APNs accepts; any other
/// value is answered with 400 BadPriority, so it cannot be represented here.
package enum APNsPriority: Int, CaseIterable, Sendable, Comparable {
    /// Power first: never wakes the device.
    case powerFirst = 1
    /// Power-aware: APNs may batch or throttle; the only value a background push may use.
    case powerAware = 5
    /// Immediate delivery; what APNs assumes when the header is omitted.
    case immediate = 10

    /// The header value, e.g. `"10"`.
    package var headerValue: String { String(rawValue) }

    package static func < (lhs: APNsPriority, rhs: APNsPriority) -> Bool { lhs.rawValue < rhs.rawValue }
}
