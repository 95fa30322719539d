import PushCrypto

/// What Web Push's encryption costs per message, beside the least it can cost: one new P-256
/// key pair and one key agreement, which RFC 8291 asks of every message, made with OpenSSL in
/// the same run. What the seal adds (key derivation, AES-128-GCM, framing) is the difference.
/// Blocks of each alternate, so that a machine whose speed moves treats both alike.
enum WebPushSealRun {
    static let blocks = 10

    static func run(messages: Int, payloadBytes: Int) throws -> WebPushSealResult {
        let browser = try P256KeyAgreementKey.generate()
        let auth = [UInt8](repeating: 7, count: 16)
        let payload = Array(BenchRows.payload(bytes: payloadBytes).utf8)
        let perBlock = max(messages / blocks, 1)
        let clock = ContinuousClock()
        var seal: [Duration] = [], floor: [Duration] = []
        var bodyBytes = 0
        for _ in 0..<blocks {
            let sealStart = clock.now
            for _ in 0..<perBlock {
                bodyBytes = try WebPushEncryption.seal(payload, p256dh: browser.publicKey, auth: auth).count
            }
            seal.append(clock.now - sealStart)
            let floorStart = clock.now
            for _ in 0..<perBlock {
                _ = try P256KeyAgreementKey.generate().sharedSecret(with: browser.publicKey)
            }
            floor.append(clock.now - floorStart)
        }
        func median(_ durations: [Duration]) -> Double {
            let sorted = durations.sorted()
            return Double(sorted[sorted.count / 2] / .nanoseconds(1)) / 1000 / Double(perBlock)
        }
        return WebPushSealResult(messages: perBlock * blocks, payloadBytes: payload.count, bodyBytes: bodyBytes,
                                 sealMicroseconds: median(seal), floorMicroseconds: median(floor))
    }
}

/// Web Push encryption per message (median of the blocks).
package struct WebPushSealResult: Sendable, Codable {
    package var messages: Int
    package var payloadBytes: Int
    package var bodyBytes: Int
    /// `WebPushEncryption.seal`: a fresh key pair and salt, key agreement, derivation, AES-128-GCM.
    package var sealMicroseconds: Double
    /// A P-256 key pair and one key agreement alone.
    package var floorMicroseconds: Double
}
