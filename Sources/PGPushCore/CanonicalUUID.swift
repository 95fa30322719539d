import Foundation

/// The canonical lowercase 8-4-4-4-12 text of a UUID, which `apns-id` requires
/// (apns-reference §2), built from the bytes directly: every request sends one,
/// and `uuidString.lowercased()` formats and then copies the text again.
extension UUID {
    public var lowercasedString: String {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        return withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var position = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    text[position] = hex[Int(byte >> 4)]
                    text[position + 1] = hex[Int(byte & 0x0F)]
                    position += 2
                }
                return position
            }
        }
    }

    /// Parses canonical 8-4-4-4-12 hex text (either case) without Foundation's scanner;
    /// nil for anything else.
    public init?(canonicalBytes text: some Collection<UInt8>) {
        guard text.count == 36 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        var nibbles = 0
        for (index, character) in text.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard character == UInt8(ascii: "-") else { return nil }
                continue
            }
            let value: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = character - UInt8(ascii: "A") + 10
            default: return nil
            }
            bytes[nibbles / 2] |= nibbles % 2 == 0 ? value << 4 : value
            nibbles += 1
        }
        self.init(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                         bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
