import Foundation

/// An IPv4 or IPv6 address, as a host literal or as a name resolved to it, and whether it is
/// an address of the public internet: a row's endpoint must not make the worker call into the
/// operator's own networks (loopback, private ranges, link-local cloud metadata services).
package enum IPAddress: Sendable, Equatable {
    case v4([UInt8])
    case v6([UInt8])

    /// Parses a literal in the forms `inet_pton` accepts (dotted quad; RFC 4291 text).
    package init?(_ text: String) {
        if text.contains(":") {
            var bytes = [UInt8](repeating: 0, count: 16)
            guard inet_pton(AF_INET6, text, &bytes) == 1 else { return nil }
            self = .v6(bytes)
        } else {
            var bytes = [UInt8](repeating: 0, count: 4)
            guard inet_pton(AF_INET, text, &bytes) == 1 else { return nil }
            self = .v4(bytes)
        }
    }

    /// An address as the resolver gives it: 4 bytes (IPv4) or 16 (IPv6).
    package init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4: self = .v4(bytes)
        case 16: self = .v6(bytes)
        default: return nil
        }
    }

    /// Not a special-purpose address (RFC 6890 and its updates): neither this network,
    /// loopback, private (RFC 1918, unique local), shared (carrier-grade NAT), link-local,
    /// documentation, benchmarking, multicast nor reserved. IPv4 inside IPv6 (mapped, NAT64)
    /// is judged by the IPv4 address it carries.
    package var isPublic: Bool {
        switch self {
        case .v4(let b):
            let blocked: [(prefix: [UInt8], bits: Int)] = [
                ([0, 0, 0, 0], 8), ([10, 0, 0, 0], 8), ([100, 64, 0, 0], 10), ([127, 0, 0, 0], 8),
                ([169, 254, 0, 0], 16), ([172, 16, 0, 0], 12), ([192, 0, 0, 0], 24), ([192, 0, 2, 0], 24),
                ([192, 88, 99, 0], 24), ([192, 168, 0, 0], 16), ([198, 18, 0, 0], 15), ([198, 51, 100, 0], 24),
                ([203, 0, 113, 0], 24), ([224, 0, 0, 0], 4), ([240, 0, 0, 0], 4),
            ]
            return !blocked.contains { Self.matches(b, $0.prefix, bits: $0.bits) }
        case .v6(let b):
            let mapped: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
            let nat64: [UInt8] = [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0]
            if Array(b.prefix(12)) == mapped || Array(b.prefix(12)) == nat64 { return IPAddress.v4(Array(b.suffix(4))).isPublic }
            let blocked: [(prefix: [UInt8], bits: Int)] = [
                ([UInt8](repeating: 0, count: 16), 96),  // unspecified, loopback, IPv4-compatible
                ([0x01, 0, 0, 0, 0, 0, 0, 0], 64),     // discard-only
                ([0x20, 0x01, 0x0d, 0xb8], 32),        // documentation
                ([0x20, 0x01, 0x00, 0x00], 23),        // IETF protocol assignments (Teredo, benchmarking…)
                ([0x20, 0x02], 16),                    // 6to4, whose embedded IPv4 could be anything
                ([0xfc, 0], 7), ([0xfe, 0x80], 10), ([0xfe, 0xc0], 10), ([0xff, 0], 8),
            ]
            return !blocked.contains { Self.matches(b, $0.prefix, bits: $0.bits) }
        }
    }

    private static func matches(_ address: [UInt8], _ prefix: [UInt8], bits: Int) -> Bool {
        for bit in 0..<bits {
            let byte = bit / 8, mask = UInt8(0x80) >> UInt8(bit % 8)
            let want = byte < prefix.count ? prefix[byte] & mask : 0
            if address[byte] & mask != want { return false }
        }
        return true
    }
}
