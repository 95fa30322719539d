/// Base64url without padding (RFC 4648 §5, as JWS requires in RFC 7515 §2).
///
/// Decoding is strict: it rejects padding, whitespace, characters outside the
/// URL-safe alphabet, an impossible length (one leftover character) and
/// non-zero trailing bits, so one value has exactly one encoding.
package enum Base64URL {
    package static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Six-bit value of each byte, or `invalid` for bytes outside the alphabet.
    private static let invalid: UInt8 = 0xFF
    private static let sextets: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, symbol) in alphabet.enumerated() {
            table[Int(symbol)] = UInt8(index)
        }
        return table
    }()

    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let input = Array(bytes)
        var output = [UInt8]()
        output.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= input.count {
            let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            output.append(alphabet[Int(group >> 6 & 0x3F)])
            output.append(alphabet[Int(group & 0x3F)])
            index += 3
        }
        switch input.count - index {
        case 1:
            let group = UInt32(input[index]) << 16
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
        case 2:
            let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            output.append(alphabet[Int(group >> 6 & 0x3F)])
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }

    package static func encode(_ text: String) -> String {
        encode(text.utf8)
    }

    /// The decoded bytes, or nil when `text` is not canonical unpadded base64url.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let symbols = Array(text.utf8)
        if symbols.count % 4 == 1 { return nil }
        var output = [UInt8]()
        output.reserveCapacity(symbols.count * 3 / 4)
        var group: UInt32 = 0
        var collected = 0
        for symbol in symbols {
            let value = sextets[Int(symbol)]
            if value == invalid { return nil }
            group = group << 6 | UInt32(value)
            collected += 1
            if collected == 4 {
                output.append(UInt8(group >> 16 & 0xFF))
                output.append(UInt8(group >> 8 & 0xFF))
                output.append(UInt8(group & 0xFF))
                group = 0
                collected = 0
            }
        }
        switch collected {
        case 2:
            if group & 0x0F != 0 { return nil }
            output.append(UInt8(group >> 4 & 0xFF))
        case 3:
            if group & 0x03 != 0 { return nil }
            output.append(UInt8(group >> 10 & 0xFF))
            output.append(UInt8(group >> 2 & 0xFF))
        default:
            break
        }
        return output
    }
}
