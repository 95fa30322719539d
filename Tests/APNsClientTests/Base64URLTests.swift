import Foundation
import PGPushCore
import Testing

@Suite("Base64url without padding")
struct Base64URLTests {
    @Test("RFC 4648 test vectors, without padding", arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ])
    func vectors(plain: String, encoded: String) {
        #expect(Base64URL.encode(plain) == encoded)
        #expect(Base64URL.decode(encoded) == Array(plain.utf8))
    }

    @Test("the URL-safe alphabet replaces + and /")
    func urlAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xFB, 0xFF, 0xBF])
        #expect(Base64URL.encode(#"{"alg":"ES256","kid":"ABC1234567"}"#) == "eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyMzQ1NjcifQ")
    }

    @Test("every length round-trips and matches Foundation's encoding with the alphabet swapped")
    func roundTripAgainstFoundation() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let reference = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == reference)
            #expect(Base64URL.decode(reference) == bytes)
        }
    }

    @Test("padding, standard-alphabet characters, whitespace, impossible lengths and stray bits are rejected",
          arguments: ["Zg==", "Zm8=", "ab+c", "ab/c", "Zm9v Yg", "Z", "Zm9vY", "Zh", "Zm9"])
    func rejectsNonCanonical(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }
}
