import FCMClient
import Foundation
import PGPushCore
import PGPushTestSupport
import PushCrypto
import Testing

/// Service-account key files as Google issues them, with a key the openssl command made.
enum ServiceAccountFiles {
    static let email = "pgpush-sender@example-project.iam.gserviceaccount.com"
    static let keyID = "0123456789abcdef0123456789abcdef01234567"

    /// The file's fields, `private_key` from `keyFile` (PEM as openssl wrote it).
    static func fields(keyFile: String) throws -> [String: Any] {
        [
            "type": "service_account", "project_id": "example-project", "private_key_id": keyID,
            "private_key": try String(contentsOfFile: keyFile, encoding: .utf8), "client_email": email,
            "client_id": "123456789012345678901", "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": "https://oauth2.googleapis.com/token",
        ]
    }

    static func json(_ fields: [String: Any]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: fields, options: [.prettyPrinted]))
    }

    /// A 2,048-bit RSA key (PKCS#8) in `key.pem` and the service-account file around it in `account.json`.
    static func make(in scratch: ScratchDirectory) throws -> (account: String, key: String) {
        try OpenSSLCommand.succeed(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"],
                                   in: scratch.path)
        let account = try scratch.write(json(fields(keyFile: scratch.file("key.pem"))), to: "account.json")
        return (account, scratch.file("key.pem"))
    }
}

@Suite("FCM service accounts: the key file and the signed assertion")
struct ServiceAccountTests {
    @Test("the assertion carries Google's header and claims and its RS256 signature verifies with openssl dgst")
    func assertionVerifiesWithOpenSSL() throws {
        let scratch = try ScratchDirectory()
        let (accountFile, keyFile) = try ServiceAccountFiles.make(in: scratch)
        try OpenSSLCommand.succeed(["pkey", "-in", keyFile, "-pubout", "-out", "public.pem"], in: scratch.path)
        let account = try ServiceAccountKey(contentsOfFile: accountFile)
        #expect(account.projectID == "example-project")
        #expect(account.tokenURI.absoluteString == "https://oauth2.googleapis.com/token")

        let issued = Date(timeIntervalSince1970: 1_780_000_000.75)
        let jwt = try ServiceAccountAssertion.sign(account, issuedAt: issued)
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let header = try #require(Base64URL.decode(parts[0]))
        let claims = try #require(Base64URL.decode(parts[1]))
        let headerObject = try #require(try JSONSerialization.jsonObject(with: Data(header)) as? [String: Any])
        #expect(headerObject.count == 3)
        #expect(headerObject["alg"] as? String == "RS256")
        #expect(headerObject["typ"] as? String == "JWT")
        #expect(headerObject["kid"] as? String == ServiceAccountFiles.keyID)
        let claimObject = try #require(try JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any])
        #expect(claimObject.count == 5)
        #expect(claimObject["iss"] as? String == ServiceAccountFiles.email)
        #expect(claimObject["scope"] as? String == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(claimObject["aud"] as? String == "https://oauth2.googleapis.com/token")
        #expect(claimObject["iat"] as? Int == 1_780_000_000)
        #expect(claimObject["exp"] as? Int == 1_780_003_600)

        try scratch.write(Array((parts[0] + "." + parts[1]).utf8), to: "signing-input")
        try scratch.write(try #require(Base64URL.decode(parts[2])), to: "signature.bin")
        let verified = try OpenSSLCommand.run(
            ["dgst", "-sha256", "-verify", "public.pem", "-signature", "signature.bin", "signing-input"], in: scratch.path)
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output.contains("Verified OK"))
    }

    @Test("a key file whose private_key is PKCS#1 (BEGIN RSA PRIVATE KEY) loads too")
    func pkcs1PrivateKey() throws {
        let scratch = try ScratchDirectory()
        let (_, keyFile) = try ServiceAccountFiles.make(in: scratch)
        try OpenSSLCommand.succeed(["pkey", "-in", keyFile, "-traditional", "-out", "pkcs1.pem"], in: scratch.path)
        let bytes = try ServiceAccountFiles.json(ServiceAccountFiles.fields(keyFile: scratch.file("pkcs1.pem")))
        let account = try ServiceAccountKey(json: bytes, source: "pkcs1.json")
        #expect(try ServiceAccountAssertion.sign(account, issuedAt: Date()).split(separator: ".").count == 3)
    }

    @Test("each unusable file is refused with what is wrong, and no error or description quotes the key")
    func unusableFilesAreNamed() throws {
        let scratch = try ScratchDirectory()
        let (accountFile, keyFile) = try ServiceAccountFiles.make(in: scratch)
        let fields = try ServiceAccountFiles.fields(keyFile: keyFile)
        func refusal(_ change: (inout [String: Any]) -> Void) throws -> ServiceAccountKeyError? {
            var changed = fields
            change(&changed)
            do {
                _ = try ServiceAccountKey(json: ServiceAccountFiles.json(changed), source: "account.json")
                return nil
            } catch let error as ServiceAccountKeyError {
                return error
            }
        }
        for field in ["project_id", "private_key_id", "private_key", "client_email", "token_uri"] {
            #expect(try refusal { $0[field] = nil } == .missingField(source: "account.json", field: field))
            #expect(try refusal { $0[field] = 42 } == .missingField(source: "account.json", field: field))
        }
        #expect(try refusal { $0["type"] = "authorized_user" } == .notAServiceAccount(source: "account.json", type: "authorized_user"))
        #expect(try refusal { $0["type"] = nil } == .notAServiceAccount(source: "account.json", type: nil))
        #expect(try refusal { $0["token_uri"] = "http://oauth2.googleapis.com/token" } == .tokenURINotHTTPS(source: "account.json"))
        #expect(throws: ServiceAccountKeyError.notJSON(source: "x")) { try ServiceAccountKey(json: Array("[1]".utf8), source: "x") }
        #expect(throws: ServiceAccountKeyError.self) { try ServiceAccountKey(contentsOfFile: scratch.file("missing.json")) }

        try OpenSSLCommand.succeed(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ec.pem"], in: scratch.path)
        let ecError = try refusal { $0["private_key"] = try? String(contentsOfFile: scratch.file("ec.pem"), encoding: .utf8) }
        guard case .privateKey(.wrongKeyType(_, let found, _)) = ecError else {
            Issue.record("an EC key was not refused as the wrong type: \(String(describing: ecError))")
            return
        }
        #expect(found == "EC")

        let keyLines = try String(contentsOfFile: keyFile, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("-----") }
        var damaged = fields
        damaged["private_key"] = "-----BEGIN PRIVATE KEY-----\n" + keyLines.dropLast(3).joined(separator: "\n") + "\n-----END PRIVATE KEY-----\n"
        let damagedError = try #require(try refusal { $0 = damaged })
        let texts = [damagedError.description, try ServiceAccountKey(contentsOfFile: accountFile).description]
        for line in keyLines where line.count > 20 {
            #expect(!texts.contains { $0.contains(line) })
        }
    }

    @Test("the token request is the JWT bearer grant, form-encoded")
    func tokenRequestBody() {
        let body = String(decoding: ServiceAccountAssertion.tokenRequestBody(assertion: "aGVhZA.Y2xhaW1z.c2ln"), as: UTF8.self)
        #expect(body == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=aGVhZA.Y2xhaW1z.c2ln")
    }
}
