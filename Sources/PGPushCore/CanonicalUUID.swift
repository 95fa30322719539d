import Foundation

/// The canonical lowercase 8-4-4-4-12 text of a UUID, which `apns-id` requires,
/// built from the bytes directly: every request sends one,
/// and `uuidString.lowercased()` formats and then copies the text again.
extension UUID {
    package var lowercasedString: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var position = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    text[position] = Self.hexDigit(byte >> 4)
                    text[position + 1] = Self.hexDigit(byte & 0x0F)
                    position += 2
                }
                return position
            }
        }
    }

    /// A lowercase hex digit, computed: a table would be an array allocated per call.
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// Parses canonical 8-4-4-4-12 hex text (either case) without Foundation's scanner, from
    /// bytes in place (a claimed row's column where libpq keeps it, an answer's header where
    /// it arrived); nil for anything else. Not generic: called once per claimed row from
    /// another module, a generic version ran unspecialised there, with a runtime metadata
    /// look-up for every character.
    package init?(canonicalText text: UnsafeBufferPointer<UInt8>) {
        guard text.count == 36 else { return nil }
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &uuid) { bytes -> Bool in
            var nibbles = 0
            for index in 0..<36 {
                let character = text[index]
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard character == UInt8(ascii: "-") else { return false }
                    continue
                }
                let value: UInt8
                switch character {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): value = character - UInt8(ascii: "A") + 10
                default: return false
                }
                bytes[nibbles / 2] |= nibbles % 2 == 0 ? value << 4 : value
                nibbles += 1
            }
            return true
        }
        guard parsed else { return nil }
        self.init(uuid: uuid)
    }
}
