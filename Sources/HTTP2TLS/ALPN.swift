import COpenSSL

/// ALPN wire encoding of "h2" and the name a finished handshake selected.
enum ALPN {
    static let h2Wire: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]

    static func selected(by ssl: OpaquePointer) -> String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }
}
