/// An answer's header fields (pseudo-headers apart), kept as they arrived in one byte
/// buffer: each field is its name's and its value's lengths (four bytes each, little
/// endian) followed by the name and the value.
///
/// One buffer because an answer's fields are read once, if at all: APNs sends `apns-id` and
/// `apns-unique-id`, 36 bytes each, and kept as `HeaderField`s they cost an array and two
/// strings per answer, on the I/O thread, for values the client mostly never reads. A
/// String is made only for a field asked for (`value(of:)`) or iterated over.
package struct ResponseHeaders: Sendable, Sequence, CustomStringConvertible {
    private var bytes: [UInt8] = []
    /// How many fields it holds.
    package private(set) var count = 0

    package init() {}

    package var isEmpty: Bool { count == 0 }

    mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        // An APNs answer's fields fit in 128 bytes: one allocation for the usual answer.
        if bytes.isEmpty { bytes.reserveCapacity(128) }
        Self.appendLength(name.count, to: &bytes)
        Self.appendLength(value.count, to: &bytes)
        bytes.append(contentsOf: name)
        bytes.append(contentsOf: value)
        count += 1
    }

    /// The first value of the field called `name`, compared without regard to ASCII case
    /// (HTTP/2 field names arrive lowercase; callers may ask in any case).
    package func value(of name: String) -> String? {
        withValue(of: name) { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with the first value of the field called `name`, in place (valid only
    /// inside it): for a value parsed at once, without a String made for it.
    package func withValue<T>(of name: String, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T? {
        var wanted = name
        return wanted.withUTF8 { wanted in
            bytes.withUnsafeBufferPointer { buffer in
                var offset = 0
                while offset < buffer.count {
                    let (nameRange, valueRange) = Self.field(at: offset, in: buffer)
                    if Self.equalIgnoringASCIICase(UnsafeBufferPointer(rebasing: buffer[nameRange]), wanted) {
                        return body(UnsafeBufferPointer(rebasing: buffer[valueRange]))
                    }
                    offset = valueRange.upperBound
                }
                return nil
            }
        }
    }

    package func makeIterator() -> Iterator { Iterator(bytes: bytes) }

    package struct Iterator: IteratorProtocol {
        let bytes: [UInt8]
        var offset = 0

        package mutating func next() -> HeaderField? {
            guard offset < bytes.count else { return nil }
            return bytes.withUnsafeBufferPointer { buffer in
                let (nameRange, valueRange) = ResponseHeaders.field(at: offset, in: buffer)
                offset = valueRange.upperBound
                return HeaderField(String(decoding: UnsafeBufferPointer(rebasing: buffer[nameRange]), as: UTF8.self),
                                   String(decoding: UnsafeBufferPointer(rebasing: buffer[valueRange]), as: UTF8.self))
            }
        }
    }

    package var description: String { "[" + map(\.description).joined(separator: ", ") + "]" }

    private static func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        let length = UInt32(truncatingIfNeeded: length)
        bytes.append(UInt8(truncatingIfNeeded: length))
        bytes.append(UInt8(truncatingIfNeeded: length >> 8))
        bytes.append(UInt8(truncatingIfNeeded: length >> 16))
        bytes.append(UInt8(truncatingIfNeeded: length >> 24))
    }

    private static func length(at offset: Int, in buffer: UnsafeBufferPointer<UInt8>) -> Int {
        Int(buffer[offset]) | Int(buffer[offset + 1]) << 8 | Int(buffer[offset + 2]) << 16 | Int(buffer[offset + 3]) << 24
    }

    /// The name's and the value's byte ranges of the field that starts at `offset`.
    private static func field(at offset: Int, in buffer: UnsafeBufferPointer<UInt8>) -> (Range<Int>, Range<Int>) {
        let nameStart = offset + 8
        let valueStart = nameStart + length(at: offset, in: buffer)
        return (nameStart..<valueStart, valueStart..<valueStart + length(at: offset + 4, in: buffer))
    }

    private static func equalIgnoringASCIICase(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Bool {
        guard left.count == right.count else { return false }
        for index in 0..<left.count where lowercased(left[index]) != lowercased(right[index]) { return false }
        return true
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }
}
