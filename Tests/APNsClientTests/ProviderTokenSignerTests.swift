import PGPushTestSupport
import Foundation
import PushCrypto
import PGPushCore
import Testing
@testable import APNsClient

@Suite("Provider token signing")
struct ProviderTokenSignerTests {
    @Test("the token has Apple's header and claims, and openssl verifies its signature with the .p8's public key")
    func tokenVerifiesWithOpenSSL() throws {
        let scratch = try ScratchDirectory()
        let keyFile = try OpenSSLTool.makeP8(named: "AuthKey_ABC1234567.p8", in: scratch)
        let signer = try ProviderTokenSigner(keyFile: keyFile, keyID: "ABC1234567", teamID: "DEF7654321")
        let token = try signer.sign(issuedAt: Date(timeIntervalSince1970: 1_700_000_000.75))

        let parts = token.jwt.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        #expect(!token.jwt.contains("="))
        #expect(IndependentJWT.decode(parts[0]) == Array(#"{"alg":"ES256","kid":"ABC1234567"}"#.utf8))
        #expect(IndependentJWT.decode(parts[1]) == Array(#"{"iss":"DEF7654321","iat":1700000000}"#.utf8))
        #expect(parts[2].count == 86)
        #expect(IndependentJWT.decode(parts[2])?.count == 64)
        #expect(token.issuedAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(token.keyID == "ABC1234567")
        #expect(token.authorizationHeader == "bearer " + token.jwt)

        #expect(try IndependentJWT.verifyWithOpenSSL(token.jwt, in: scratch))
    }

    @Test("a tampered token fails the openssl check")
    func tamperedTokenFails() throws {
        let scratch = try ScratchDirectory()
        let keyFile = try OpenSSLTool.makeP8(named: "key.p8", in: scratch)
        let signer = try ProviderTokenSigner(keyFile: keyFile, keyID: "ABC1234567", teamID: "DEF7654321")
        let token = try signer.sign(issuedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let parts = token.jwt.split(separator: ".")

        let otherClaims = Data(#"{"iss":"DEF7654321","iat":1700003600}"#.utf8).base64EncodedString()
            .replacingOccurrences(of: "=", with: "")
        let forgedClaims = [String(parts[0]), otherClaims, String(parts[2])].joined(separator: ".")
        #expect(try !IndependentJWT.verifyWithOpenSSL(forgedClaims, in: scratch))

        var signature = IndependentJWT.decode(parts[2]) ?? []
        signature[5] ^= 0x40
        let forgedSignature = String(parts[0]) + "." + String(parts[1]) + "." + Base64URL.encode(signature)
        #expect(try !IndependentJWT.verifyWithOpenSSL(forgedSignature, in: scratch))
    }

    @Test("ES256PublicKey (the simulator's check) accepts the token and rejects a forged one")
    func simulatorVerification() throws {
        let key = try ES256PrivateKey.generate()
        let signer = ProviderTokenSigner(key: key, identity: try ProviderTokenIdentity(keyID: "KEY0000001", teamID: "TEAM000001"))
        let token = try signer.sign(issuedAt: Date())
        let parts = token.jwt.split(separator: ".")
        let signature = try #require(IndependentJWT.decode(parts[2]))
        let publicKey = try key.publicKey()
        #expect(publicKey.verify(message: Array((parts[0] + "." + parts[1]).utf8), rawSignature: signature))
        #expect(!publicKey.verify(message: Array((parts[0] + "." + parts[0]).utf8), rawSignature: signature))
    }

    @Test("key and team ids must be 10 characters of A-Z and 0-9; the error names which is wrong",
          arguments: ["ABC123456", "ABC12345678", "abc1234567", "ABC-123456", "", "ABC123456É"])
    func invalidIdentifiers(bad: String) {
        #expect(throws: ProviderTokenError.invalidKeyID(bad)) { try ProviderTokenIdentity(keyID: bad, teamID: "DEF7654321") }
        #expect(throws: ProviderTokenError.invalidTeamID(bad)) { try ProviderTokenIdentity(keyID: "ABC1234567", teamID: bad) }
        #expect(ProviderTokenError.invalidKeyID(bad).description.contains("key id"))
        #expect(ProviderTokenError.invalidTeamID(bad).description.contains("team id"))
    }

    @Test("a token's description does not reveal the JWT")
    func descriptionHidesJWT() throws {
        let signer = ProviderTokenSigner(
            key: try ES256PrivateKey.generate(), identity: try ProviderTokenIdentity(keyID: "KEY0000001", teamID: "TEAM000001"))
        let token = try signer.sign(issuedAt: Date())
        let signature = String(token.jwt.split(separator: ".")[2])
        var dumped = ""
        dump(token, to: &dumped)
        for text in [token.description, String(describing: token), String(reflecting: token), "\(token)", dumped] {
            #expect(!text.contains(signature))
            #expect(text.contains("KEY0000001"))
        }
    }

    @Test("key file problems surface as CredentialError")
    func keyFileErrors() throws {
        let scratch = try ScratchDirectory()
        #expect(throws: CredentialError.fileNotFound(path: scratch.file("none.p8"))) {
            try ProviderTokenSigner(keyFile: scratch.file("none.p8"), keyID: "ABC1234567", teamID: "DEF7654321")
        }
    }
}
