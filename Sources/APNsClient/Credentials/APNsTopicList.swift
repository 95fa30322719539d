/// Reads the APNs topics extension: SEQUENCE { UTF8String topic, SEQUENCE { UTF8String type }, ... }.
enum APNsTopicList {
    private static let sequenceTag: UInt8 = 0x30
    private static let utf8StringTag: UInt8 = 0x0C

    static func topics(fromDER bytes: [UInt8]) -> [String]? {
        guard let outer = element(in: bytes[...]), outer.tag == sequenceTag else { return nil }
        var remaining = outer.content
        var topics: [String] = []
        while !remaining.isEmpty {
            guard let item = element(in: remaining) else { return nil }
            if item.tag == utf8StringTag {
                topics.append(String(decoding: item.content, as: UTF8.self))
            }
            remaining = item.rest
        }
        return topics
    }

    /// One DER TLV at the start of `bytes`, or nil when it is truncated or uses an unsupported length form.
    private static func element(in bytes: ArraySlice<UInt8>) -> (tag: UInt8, content: ArraySlice<UInt8>, rest: ArraySlice<UInt8>)? {
        var cursor = bytes.startIndex
        guard cursor < bytes.endIndex else { return nil }
        let tag = bytes[cursor]
        cursor += 1
        guard cursor < bytes.endIndex else { return nil }
        var length = Int(bytes[cursor])
        cursor += 1
        if length & 0x80 != 0 {
            let lengthBytes = length & 0x7F
            guard lengthBytes >= 1, lengthBytes <= 3, cursor + lengthBytes <= bytes.endIndex else { return nil }
            length = 0
            for _ in 0..<lengthBytes {
                length = length << 8 | Int(bytes[cursor])
                cursor += 1
            }
        }
        guard length <= bytes.endIndex - cursor else { return nil }
        return (tag, bytes[cursor..<cursor + length], bytes[(cursor + length)...])
    }
}
