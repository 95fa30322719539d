import PGPushCore

/// A device token as APNs wants it in a device push's URL: lowercase hex of the bytes the app
/// received at registration.
///
/// The length is deliberately not fixed: 64 hex digits is common, but 108 and 160
/// have been seen and Apple says not to assume a size. Any even length from 2 to
/// 400 digits is accepted.
package struct DeviceToken: Hashable, Sendable, CustomStringConvertible {
    package static let maximumLength = 400

    /// Lowercase hex digits, even length.
    package let hex: String

    /// Accepts hex digits in either case; anything else is a `BadDeviceToken` failure.
    package init(validating text: String) throws(ValidationFailure) {
        let utf8 = text.utf8
        guard utf8.count >= 2, utf8.count <= Self.maximumLength else {
            throw ValidationFailure(.badDeviceToken,
                "device token must have 2 to \(Self.maximumLength) hex digits, got \(utf8.count) characters")
        }
        guard utf8.count % 2 == 0 else {
            throw ValidationFailure(.badDeviceToken, "device token must have an even number of hex digits, got \(utf8.count)")
        }
        // Most tokens are stored as the app formatted them, lowercase: kept as they are.
        if utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }) {
            hex = text
            return
        }
        var lowered = [UInt8]()
        lowered.reserveCapacity(utf8.count)
        for (offset, byte) in utf8.enumerated() {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"):
                lowered.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "F"):
                lowered.append(byte | 0x20)
            default:
                throw ValidationFailure(.badDeviceToken, "device token has a non-hex character at position \(offset + 1)")
            }
        }
        hex = String(decoding: lowered, as: UTF8.self)
    }

    package var description: String { hex }
}
