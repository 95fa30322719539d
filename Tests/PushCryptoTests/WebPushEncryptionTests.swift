import Foundation
@testable import PushCrypto
import Testing

/// RFC 8291's message encryption: the RFC's own example (Appendix A) byte for byte, and what
/// must hold for every message: it opens with the right keys only, and no two are alike.
struct WebPushEncryptionTests {
    /// RFC 8291 Appendix A, base64url as the RFC prints them.
    enum Example {
        static let plaintext = "When I grow up, I want to be a watermelon"
        static let senderPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let senderPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        static let browserPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let browserPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let body = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    }

    static func bytes(_ base64URL: String) -> [UInt8] {
        var text = base64URL.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return [UInt8](Data(base64Encoded: text)!)
    }

    static func browser() throws -> P256KeyAgreementKey {
        try P256KeyAgreementKey(privateKey: bytes(Example.browserPrivate), publicKey: bytes(Example.browserPublic))
    }

    @Test func theRFCExampleIsSealedByteForByte() throws {
        let sender = try P256KeyAgreementKey(privateKey: Self.bytes(Example.senderPrivate), publicKey: Self.bytes(Example.senderPublic))
        let body = try WebPushEncryption.seal(Array(Example.plaintext.utf8), p256dh: Self.bytes(Example.browserPublic),
                                              auth: Self.bytes(Example.auth), senderKey: sender, salt: Self.bytes(Example.salt))
        #expect(body == Self.bytes(Example.body))
        #expect(body.count == 144)
    }

    @Test func theRFCExampleOpensWithTheBrowsersKey() throws {
        let opened = try WebPushEncryption.open(Self.bytes(Example.body), recipient: Self.browser(), auth: Self.bytes(Example.auth))
        #expect(String(decoding: opened, as: UTF8.self) == Example.plaintext)
    }

    /// A fresh sender key and salt each time: the same payload never gives the same body,
    /// and each opens to it.
    @Test func everyMessageHasItsOwnKeyAndSalt() throws {
        let browser = try Self.browser(), auth = Self.bytes(Example.auth)
        let payload = Array(#"{"title":"hi"}"#.utf8)
        let first = try WebPushEncryption.seal(payload, p256dh: browser.publicKey, auth: auth)
        let second = try WebPushEncryption.seal(payload, p256dh: browser.publicKey, auth: auth)
        #expect(first[0..<16] != second[0..<16])
        #expect(first[21..<86] != second[21..<86])
        #expect(try WebPushEncryption.open(first, recipient: browser, auth: auth) == payload)
        #expect(try WebPushEncryption.open(second, recipient: browser, auth: auth) == payload)
        #expect(first.count == WebPushEncryption.headerLength + payload.count + 1 + 16)
    }

    @Test func anotherSubscriptionOrAnAlteredByteDoesNotOpen() throws {
        let browser = try Self.browser(), auth = Self.bytes(Example.auth)
        let body = try WebPushEncryption.seal(Array("secret".utf8), p256dh: browser.publicKey, auth: auth)
        let other = try P256KeyAgreementKey.generate()
        #expect(throws: WebPushCryptoError.authenticationFailed) { try WebPushEncryption.open(body, recipient: other, auth: auth) }
        var otherAuth = auth
        otherAuth[0] ^= 1
        #expect(throws: WebPushCryptoError.authenticationFailed) {
            try WebPushEncryption.open(body, recipient: browser, auth: otherAuth)
        }
        for index in [0, 100, body.count - 1] {
            var altered = body
            altered[index] ^= 0x40
            #expect(throws: WebPushCryptoError.authenticationFailed) {
                try WebPushEncryption.open(altered, recipient: browser, auth: auth)
            }
        }
    }

    @Test func theLargestPayloadFitsOneRecordAndOneMoreByteDoesNot() throws {
        let browser = try Self.browser(), auth = Self.bytes(Example.auth)
        #expect(WebPushEncryption.largestPlaintext == 3993)
        let largest = [UInt8](repeating: 0x61, count: 3993)
        let body = try WebPushEncryption.seal(largest, p256dh: browser.publicKey, auth: auth)
        #expect(body.count == 4096)
        #expect(try WebPushEncryption.open(body, recipient: browser, auth: auth) == largest)
        #expect(throws: WebPushCryptoError.plaintextTooLarge(length: 3994, limit: 3993)) {
            try WebPushEncryption.seal(largest + [0x61], p256dh: browser.publicKey, auth: auth)
        }
    }

    /// A subscription's keys come from a row: anything but a P-256 point and a 16-byte secret
    /// is a clear error, never a crash.
    @Test func keysThatAreNotASubscriptionsAreRefused() throws {
        let browserPublic = Self.bytes(Example.browserPublic), auth = Self.bytes(Example.auth)
        let payload = Array("x".utf8)
        #expect(throws: WebPushCryptoError.invalidAuthSecret(length: 15)) {
            try WebPushEncryption.seal(payload, p256dh: browserPublic, auth: Array(auth.prefix(15)))
        }
        for bad in [Array(browserPublic.prefix(64)), [0x02] + browserPublic.dropFirst(), [UInt8](repeating: 0, count: 65),
                    [0x04] + [UInt8](repeating: 0xff, count: 64), [0x04] + browserPublic[1..<33] + [UInt8](repeating: 1, count: 32)] {
            #expect {
                try WebPushEncryption.seal(payload, p256dh: bad, auth: auth)
            } throws: { error in
                if case .invalidPublicKey = error as? WebPushCryptoError { return true }
                return false
            }
        }
        #expect(throws: WebPushCryptoError.invalidPrivateKey) {
            try P256KeyAgreementKey(privateKey: Self.bytes(Example.senderPrivate), publicKey: browserPublic)
        }
    }

    @Test func aBodyThatIsNotOneRecordIsRefused() throws {
        let browser = try Self.browser(), auth = Self.bytes(Example.auth)
        let body = Self.bytes(Example.body)
        var smallRecords = body
        smallRecords[16..<20] = [0, 0, 0, 18]
        for malformed in [Array(body.prefix(20)), Array(body.prefix(90)), smallRecords] {
            #expect {
                try WebPushEncryption.open(malformed, recipient: browser, auth: auth)
            } throws: { error in
                if case .malformedBody = error as? WebPushCryptoError { return true }
                return false
            }
        }
    }

    @Test func aGeneratedKeyPairRoundTripsThroughItsBytes() throws {
        let key = try P256KeyAgreementKey.generate()
        let again = try P256KeyAgreementKey(privateKey: key.privateKeyBytes(), publicKey: key.publicKey)
        #expect(again.publicKey == key.publicKey && key.publicKey.count == 65 && key.publicKey[0] == 4)
        let peer = try P256KeyAgreementKey.generate()
        #expect(try key.sharedSecret(with: peer.publicKey) == peer.sharedSecret(with: key.publicKey))
    }
}
