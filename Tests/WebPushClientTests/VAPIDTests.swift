import Foundation
import PGPushCore
import PGPushTestSupport
import PushCrypto
import Synchronization
import Testing
@testable import WebPushClient

/// VAPID (RFC 8292): what each token says, that a verifier we did not write accepts its
/// signature, which subjects push services would refuse, and when a token is signed again.
struct VAPIDTests {
    static let subject = try! VAPIDSubject("mailto:push-ops@example.com")

    /// The token's three parts, with its header and claims as JSON objects.
    static func parts(of header: String) throws -> (jwt: String, key: String, header: [String: Any], claims: [String: Any]) {
        let pattern = try #require(header.wholeMatch(of: /vapid t=([A-Za-z0-9_\-.]+), k=([A-Za-z0-9_\-]+)/))
        let jwt = String(pattern.1), key = String(pattern.2)
        let segments = jwt.split(separator: ".")
        #expect(segments.count == 3)
        func object(_ segment: Substring) throws -> [String: Any] {
            let bytes = try #require(Base64URL.decode(segment))
            return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        }
        return (jwt, key, try object(segments[0]), try object(segments[1]))
    }

    @Test func aTokenNamesTheOriginTwelveHoursAndTheSubjectAndCarriesThePublicKey() throws {
        let key = try ES256PrivateKey.generate()
        let signer = try VAPIDSigner(key: key, subject: Self.subject)
        let now = Date(timeIntervalSince1970: 1_764_900_000.75)
        let token = try signer.sign(audience: "https://updates.push.services.mozilla.com", now: now)
        let (_, publicKey, header, claims) = try Self.parts(of: token.authorizationHeader)
        #expect(header["typ"] as? String == "JWT" && header["alg"] as? String == "ES256" && header.count == 2)
        #expect(claims["aud"] as? String == "https://updates.push.services.mozilla.com")
        #expect(claims["exp"] as? Int == 1_764_900_000 + 12 * 3600)
        #expect(claims["sub"] as? String == "mailto:push-ops@example.com")
        #expect(token.expiresAt == Date(timeIntervalSince1970: 1_764_900_000 + 12 * 3600))
        #expect(Base64URL.decode(publicKey) == (try key.uncompressedPublicKey()))
        #expect(publicKey == signer.publicKey && publicKey.count == 87)
        // The JWT never shows in logs.
        #expect(!token.description.contains("eyJ") && !String(reflecting: token).contains("eyJ"))
    }

    @Test func theSignatureVerifiesWithOpenSSLsCommandLine() throws {
        let scratch = try ScratchDirectory()
        let key = try ES256PrivateKey.generate()
        try scratch.write(try key.publicKeyPEM(), to: "public.pem")
        let token = try VAPIDSigner(key: key, subject: Self.subject).sign(audience: "https://web.push.apple.com", now: Date())
        let (jwt, _, _, _) = try Self.parts(of: token.authorizationHeader)
        let segments = jwt.split(separator: ".")
        try scratch.write(Array((segments[0] + "." + segments[1]).utf8), to: "message")
        let raw = try #require(Base64URL.decode(segments[2]))
        #expect(raw.count == 64)
        try scratch.write(IndependentDER.ecdsaSignature(raw: raw), to: "signature.der")
        let verified = try OpenSSLCommand.run(
            ["dgst", "-sha256", "-verify", "public.pem", "-signature", "signature.der", "message"], in: scratch.path)
        #expect(verified.status == 0 && verified.output.contains("Verified OK"), "\(verified.output)")
    }

    @Test(arguments: ["mailto:ops@example.com", "mailto:web-push+alerts@mail.example.org", "https://example.com",
                      "https://www.example.com/contact", "https://example.com:8443/push"])
    func subjectsPushServicesAccept(_ text: String) throws {
        #expect(try VAPIDSubject(text).text == text)
    }

    @Test(arguments: ["ops@example.com", "mailto: ops@example.com", "mailto:<ops@example.com>", "mailto:@example.com",
                      "mailto:ops@localhost", "mailto:ops@example.invalid", "https://localhost", "https://push.local/x",
                      "http://example.com", "https://user@example.com", "https://example", "mailto:ops@example.com\n", "",
                      "mailto:\"ops\"@example.com"])
    func subjectsPushServicesRefuse(_ text: String) {
        #expect(throws: VAPIDError.self) { try VAPIDSubject(text) }
    }

    /// One token per origin, reused by every request until an hour before it expires.
    @Test func aTokenIsReusedPerOriginUntilAnHourBeforeItExpires() throws {
        let clock = ManualDate(Date(timeIntervalSince1970: 1_764_900_000))
        let cache = VAPIDTokenCache(signer: try VAPIDSigner(key: try ES256PrivateKey.generate(), subject: Self.subject),
                                    now: { clock.now })
        let first = try cache.token(for: "https://fcm.googleapis.com")
        let other = try cache.token(for: "https://web.push.apple.com")
        #expect(other.audience == "https://web.push.apple.com" && other != first)
        clock.advance(by: 10 * 3600)
        #expect(try cache.token(for: "https://fcm.googleapis.com") == first)
        clock.advance(by: 3600 + 1)
        let renewed = try cache.token(for: "https://fcm.googleapis.com")
        #expect(renewed != first && renewed.expiresAt > first.expiresAt)
        #expect(renewed.expiresAt.timeIntervalSince(clock.now) <= 24 * 3600)
    }

    /// A token the push service refused is not sent again: the next request to that origin
    /// (the probe after the pause) gets one signed anew; other origins keep theirs.
    @Test func aRefusedTokenIsSignedAnew() throws {
        let clock = ManualDate(Date(timeIntervalSince1970: 1_764_900_000))
        let cache = VAPIDTokenCache(signer: try VAPIDSigner(key: try ES256PrivateKey.generate(), subject: Self.subject),
                                    now: { clock.now })
        let refused = try cache.token(for: "https://web.push.apple.com")
        let other = try cache.token(for: "https://fcm.googleapis.com")
        cache.forget("https://web.push.apple.com")
        clock.advance(by: 5)
        let fresh = try cache.token(for: "https://web.push.apple.com")
        #expect(fresh != refused && fresh.expiresAt > refused.expiresAt)
        #expect(try cache.token(for: "https://fcm.googleapis.com") == other)
    }
}

/// A wall clock that moves only when the test says.
final class ManualDate: Sendable {
    private let instant: Mutex<Date>
    init(_ start: Date) { instant = Mutex(start) }
    var now: Date { instant.withLock { $0 } }
    func advance(by seconds: TimeInterval) { instant.withLock { $0 += seconds } }
}

/// The other side of VAPID, as the simulator checks it: RFC 8292's own example token
/// verifies against its `k`, and our tokens against theirs.
struct VAPIDVerificationTests {
    /// RFC 8292 §2.4: the token and key of its example request.
    static let exampleJWT = "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL3B1c2guZXhhbXBsZS5uZXQiLCJleHAiOjE0NTM1MjM3NjgsInN1YiI6Im1haWx0bzpwdXNoQGV4YW1wbGUuY29tIn0.i3CYb7t4xfxCDquptFOepC9GAu_HLGkMlMuCGSK2rpiUfnK9ojFwDXb1JrErtmysazNjjvW2L9OkSSHzvoD1oA"
    static let exampleKey = "BA1Hxzyi1RUM1b5wjxsn7nGxAszw2u61m164i3MrAIxHF6YK5h4SDYic-dRuU_RCPCfA5aq9ojSwk5Y2EmClBPs"

    static func verifies(_ jwt: String, with key: ES256PublicKey) -> Bool {
        let segments = jwt.split(separator: ".")
        guard segments.count == 3, let signature = Base64URL.decode(segments[2]) else { return false }
        return key.verify(message: Array((segments[0] + "." + segments[1]).utf8), rawSignature: signature)
    }

    @Test func theRFCExampleVerifiesWithItsKeyAndNotOnceAltered() throws {
        let key = try ES256PublicKey(uncompressedPoint: try #require(Base64URL.decode(Self.exampleKey)))
        #expect(Self.verifies(Self.exampleJWT, with: key))
        #expect(!Self.verifies(Self.exampleJWT.replacingOccurrences(of: "eyJhdWQi", with: "eyJhdWRi"), with: key))
        let claims = try #require(Base64URL.decode(Self.exampleJWT.split(separator: ".")[1]))
        #expect(String(decoding: claims, as: UTF8.self) == #"{"aud":"https://push.example.net","exp":1453523768,"sub":"mailto:push@example.com"}"#)
    }

    @Test func ourTokensVerifyWithTheKeyTheirHeaderCarries() throws {
        let token = try VAPIDSigner(key: try ES256PrivateKey.generate(), subject: VAPIDTests.subject)
            .sign(audience: "https://push.example.net", now: Date())
        let (jwt, k, _, _) = try VAPIDTests.parts(of: token.authorizationHeader)
        let key = try ES256PublicKey(uncompressedPoint: try #require(Base64URL.decode(k)))
        #expect(Self.verifies(jwt, with: key))
        let other = try ES256PublicKey(uncompressedPoint: try #require(Base64URL.decode(Self.exampleKey)))
        #expect(!Self.verifies(jwt, with: other))
    }

    @Test func pointsThatAreNoKeyAreRefused() {
        for bad in [[UInt8](repeating: 4, count: 65), [4] + [UInt8](repeating: 0, count: 64), [UInt8](repeating: 1, count: 33)] {
            #expect(throws: CredentialError.self) { try ES256PublicKey(uncompressedPoint: bad) }
        }
    }
}
