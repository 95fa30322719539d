import Foundation

/// CI mode keeps the whole suite within about three minutes on two cores;
/// `PGPUSH_RELIABILITY_LONG=1` runs many more rounds and rows.
enum ReliabilityMode {
    static let isLong = ProcessInfo.processInfo.environment["PGPUSH_RELIABILITY_LONG"] == "1"

    /// `ci` in the normal run, `long` under PGPUSH_RELIABILITY_LONG=1.
    static func pick<Value>(ci: Value, long: Value) -> Value { isLong ? long : ci }
}
