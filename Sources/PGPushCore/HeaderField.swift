/// One HTTP/2 request header as pgpush sends it to APNs.
///
/// `neverIndex` marks values that change with every request (`:path`, `apns-id`,
/// `apns-expiration`, `apns-collapse-id`): adding them to APNs's small HPACK
/// dynamic table would only evict the values worth keeping (the JWT, the topic,
/// the push type). The HTTP/2 layer maps it to `NGHTTP2_NV_FLAG_NO_INDEX`.
public struct HeaderField: Equatable, Sendable, CustomStringConvertible {
    /// Lowercase, as HTTP/2 requires.
    public let name: String
    public let value: String
    public let neverIndex: Bool

    public init(name: String, value: String, neverIndex: Bool) {
        self.name = name
        self.value = value
        self.neverIndex = neverIndex
    }

    /// Redacts `authorization`, so a JWT never reaches a log line.
    public var description: String {
        name == "authorization" ? "authorization: bearer <redacted>" : "\(name): \(value)"
    }
}
