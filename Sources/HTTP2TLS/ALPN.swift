import COpenSSL

/// ALPN wire encodings of the protocols offered, and the name a finished handshake selected.
enum ALPN {
    static let h2 = "h2"
    static let http1 = "http/1.1"
    static let h2Wire: [UInt8] = wire([h2])
    /// h2 first: a server that speaks both picks it.
    static let h2AndHTTP1Wire: [UInt8] = wire([h2, http1])

    static func wire(_ names: [String]) -> [UInt8] {
        names.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
    }

    static func selected(by ssl: OpaquePointer) -> String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }
}
