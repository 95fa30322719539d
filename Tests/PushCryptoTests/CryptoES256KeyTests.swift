import PGPushTestSupport
import Foundation
import Testing
@testable import PushCrypto

@Suite("ES256 keys")
struct CryptoES256KeyTests {
    @Test("a signature of an openssl-made .p8 key verifies with openssl dgst; a changed message does not")
    func signatureVerifiesWithOpenSSLCommand() throws {
        let scratch = try ScratchDirectory()
        let keyPath = try CryptoTestKeys.p8(named: "AuthKey_ABC1234567.p8", in: scratch)
        try OpenSSLCommand.succeed(["pkey", "-in", keyPath, "-pubout", "-out", "public.pem"], in: scratch.path)

        let key = try ES256PrivateKey(contentsOfFile: keyPath)
        let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJURUFNIn0".utf8)
        let signature = try key.sign(message)
        #expect(signature.count == 64)

        try scratch.write(message, to: "message")
        try scratch.write(IndependentDER.ecdsaSignature(raw: signature), to: "signature.der")
        let verified = try OpenSSLCommand.run(
            ["dgst", "-sha256", "-verify", "public.pem", "-signature", "signature.der", "message"], in: scratch.path)
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output.contains("Verified OK"))

        try scratch.write(message + [0x21], to: "message")
        let tampered = try OpenSSLCommand.run(
            ["dgst", "-sha256", "-verify", "public.pem", "-signature", "signature.der", "message"], in: scratch.path)
        #expect(tampered.status != 0)
    }

    @Test("the public key matches openssl's, and verify accepts only the right message and signature")
    func publicKeyVerification() throws {
        let scratch = try ScratchDirectory()
        let keyPath = try CryptoTestKeys.p8(named: "key.p8", in: scratch)
        let opensslPublic = try OpenSSLCommand.succeed(["pkey", "-in", keyPath, "-pubout"], in: scratch.path)
        let key = try ES256PrivateKey(contentsOfFile: keyPath)
        #expect(try key.publicKeyPEM() == opensslPublic)

        let publicKey = try ES256PublicKey(pemEncoded: opensslPublic)
        let fromFile = try ES256PublicKey.fromPrivateKeyFile(keyPath)
        let fromEitherFile = try ES256PublicKey(contentsOfFile: keyPath)
        let publicPath = try scratch.write(opensslPublic, to: "public.pem")
        let fromPublicFile = try ES256PublicKey(contentsOfFile: publicPath)
        #expect(try fromEitherFile.pemEncoded() == opensslPublic)
        #expect(try fromPublicFile.pemEncoded() == opensslPublic)
        let message = Array("header.claims".utf8)
        let signature = try key.sign(message)
        #expect(publicKey.verify(message: message, rawSignature: signature))
        #expect(fromFile.verify(message: message, rawSignature: signature))
        #expect(!publicKey.verify(message: Array("header.claimz".utf8), rawSignature: signature))
        var flipped = signature
        flipped[40] ^= 0x01
        #expect(!publicKey.verify(message: message, rawSignature: flipped))
        #expect(!publicKey.verify(message: message, rawSignature: signature.prefix(63)))
        #expect(!publicKey.verify(message: message, rawSignature: [UInt8](repeating: 0, count: 64)))

        let otherKey = try ES256PrivateKey.generate()
        #expect(!publicKey.verify(message: message, rawSignature: try otherKey.sign(message)))
    }

    @Test("a signature made by openssl dgst verifies with ES256PublicKey")
    func verifiesOpenSSLSignature() throws {
        let scratch = try ScratchDirectory()
        let keyPath = try CryptoTestKeys.p8(named: "key.p8", in: scratch)
        let message = Array("signed by the openssl command".utf8)
        try scratch.write(message, to: "message")
        try OpenSSLCommand.succeed(["dgst", "-sha256", "-sign", keyPath, "-out", "signature.der", "message"], in: scratch.path)
        let der = Array(try Data(contentsOf: URL(fileURLWithPath: scratch.file("signature.der"))))
        let raw = try ECDSASignatureEncoding.raw(fromDER: der)
        #expect(IndependentDER.ecdsaSignature(raw: raw) == der)
        let publicKey = try ES256PrivateKey(contentsOfFile: keyPath).publicKey()
        #expect(publicKey.verify(message: message, rawSignature: raw))
    }

    @Test("short r and s are left-padded to 32 bytes each and round-trip through DER")
    func signatureEncodingPadsScalars() throws {
        var raw = [UInt8](repeating: 0, count: 64)
        raw[31] = 0x05
        raw[32] = 0x80
        raw[63] = 0x01
        let der = try ECDSASignatureEncoding.der(fromRaw: raw)
        #expect(der == IndependentDER.ecdsaSignature(raw: raw))
        #expect(try ECDSASignatureEncoding.raw(fromDER: der) == raw)
        #expect(throws: CredentialError.invalidSignatureLength(65)) { try ECDSASignatureEncoding.der(fromRaw: raw + [0]) }
    }

    @Test("a generated key writes PKCS#8 that openssl accepts and that loads back to the same key")
    func generatedKeyRoundTrip() throws {
        let scratch = try ScratchDirectory()
        let key = try ES256PrivateKey.generate()
        let pem = try key.pkcs8PEM()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let path = try scratch.write(pem, to: "generated.p8")
        let check = try OpenSSLCommand.succeed(["pkey", "-in", path, "-check", "-noout", "-text"], in: scratch.path)
        #expect(check.contains("prime256v1") || check.contains("P-256"))
        let reloaded = try ES256PrivateKey(contentsOfFile: path)
        #expect(try reloaded.publicKeyPEM() == key.publicKeyPEM())
    }

    @Test("writePKCS8 makes an owner-only .p8 file, also when replacing a readable one")
    func writesOwnerOnlyFile() throws {
        let scratch = try ScratchDirectory()
        let path = try scratch.write("old contents that are longer than nothing", to: "demo.p8")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        let key = try ES256PrivateKey.generate()
        try key.writePKCS8(toFile: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try ES256PrivateKey(contentsOfFile: path).publicKeyPEM() == key.publicKeyPEM())
        #expect(try scratch.read("demo.p8") == key.pkcs8PEM())
        let blocked = scratch.file("missing-directory/demo.p8")
        #expect(throws: CredentialError.fileNotWritable(path: blocked, reason: "No such file or directory")) {
            try key.writePKCS8(toFile: blocked)
        }
    }

    @Test("a SEC1 'EC PRIVATE KEY' P-256 file is accepted too")
    func acceptsSEC1Key() throws {
        let scratch = try ScratchDirectory()
        try OpenSSLCommand.succeed(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sec1.pem"], in: scratch.path)
        #expect(try scratch.read("sec1.pem").contains("BEGIN EC PRIVATE KEY"))
        let key = try ES256PrivateKey(contentsOfFile: scratch.file("sec1.pem"))
        #expect(try key.sign([1, 2, 3]).count == 64)
    }

    @Test("missing, unreadable and non-key files are told apart")
    func fileErrors() throws {
        let scratch = try ScratchDirectory()
        let missing = scratch.file("absent.p8")
        #expect(throws: CredentialError.fileNotFound(path: missing)) { try ES256PrivateKey(contentsOfFile: missing) }
        #expect(throws: CredentialError.fileUnreadable(path: scratch.path, reason: "it is a directory")) {
            try ES256PrivateKey(contentsOfFile: scratch.path)
        }
        // A device never ends and a FIFO blocks its open until a writer comes: neither is read.
        #expect(throws: CredentialError.fileUnreadable(path: "/dev/zero", reason: "not a regular file")) {
            try ES256PrivateKey(contentsOfFile: "/dev/zero")
        }
        let fifo = scratch.file("key.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: CredentialError.fileUnreadable(path: fifo, reason: "not a regular file")) {
            try ES256PrivateKey(contentsOfFile: fifo)
        }
        let huge = scratch.file("huge.p8")
        #expect(FileManager.default.createFile(atPath: huge, contents: nil) && truncate(huge, 2 << 20) == 0)
        #expect(throws: CredentialError.fileUnreadable(path: huge, reason: "larger than 1 MiB, so not a key or certificate")) {
            try ES256PrivateKey(contentsOfFile: huge)
        }
        let text = try scratch.write("this is not a key\n", to: "notes.txt")
        #expect(throws: CredentialError.notAPrivateKey(source: text)) { try ES256PrivateKey(contentsOfFile: text) }
        let empty = try scratch.write("", to: "empty.p8")
        #expect(throws: CredentialError.notAPrivateKey(source: empty)) { try ES256PrivateKey(contentsOfFile: empty) }
        let keyPath = try CryptoTestKeys.p8(named: "key.p8", in: scratch)
        let publicOnly = try OpenSSLCommand.succeed(["pkey", "-in", keyPath, "-pubout"], in: scratch.path)
        #expect(throws: CredentialError.notAPrivateKey(source: "PEM data")) { try ES256PrivateKey(pemEncoded: publicOnly) }
        #expect(throws: CredentialError.notAPublicKey(source: "PEM data")) { try ES256PublicKey(pemEncoded: "garbage") }
    }

    @Test("an RSA key, a P-384 key and an encrypted key are refused with the reason")
    func wrongKinds() throws {
        let scratch = try ScratchDirectory()
        let rsa = try CryptoTestKeys.rsa(named: "rsa.pem", in: scratch)
        #expect(throws: CredentialError.wrongKeyType(source: rsa, found: "RSA", needed: "APNs provider tokens need an EC P-256 key (ES256)")) { try ES256PrivateKey(contentsOfFile: rsa) }

        let p384 = try CryptoTestKeys.p8(curve: "P-384", named: "p384.p8", in: scratch)
        #expect(throws: CredentialError.wrongCurve(source: p384, found: "secp384r1")) { try ES256PrivateKey(contentsOfFile: p384) }
        let p384Public = try OpenSSLCommand.succeed(["pkey", "-in", p384, "-pubout"], in: scratch.path)
        #expect(throws: CredentialError.wrongCurve(source: "PEM data", found: "secp384r1")) { try ES256PublicKey(pemEncoded: p384Public) }

        let encrypted = try CryptoTestKeys.encryptedP8(named: "encrypted.p8", password: "hunter22", in: scratch)
        let error = #expect(throws: CredentialError.self) { try ES256PrivateKey(contentsOfFile: encrypted) }
        #expect(error == .encryptedPrivateKey(source: encrypted))
        #expect(error?.description.contains("unencrypted") == true)
    }

    @Test("descriptions and errors never contain key material")
    func noSecretsInDescriptions() throws {
        let scratch = try ScratchDirectory()
        let keyPath = try CryptoTestKeys.p8(named: "key.p8", in: scratch)
        let secret = CryptoTestKeys.secretLines(ofPEM: try scratch.read("key.p8"))
        #expect(!secret.isEmpty)
        let key = try ES256PrivateKey(contentsOfFile: keyPath)
        let texts = [
            key.description, String(describing: key), String(reflecting: key),
            CredentialError.wrongCurve(source: keyPath, found: "x").description,
        ]
        for text in texts {
            for line in secret {
                #expect(!text.contains(line))
            }
        }
    }

    @Test("one key signs from many tasks at once, and every signature verifies")
    func concurrentSigning() async throws {
        let key = try ES256PrivateKey.generate()
        let publicKey = try key.publicKey()
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var allValid = true
                    for round in 0..<50 {
                        let message = Array("task \(task) round \(round)".utf8)
                        let signature = try key.sign(message)
                        allValid = allValid && publicKey.verify(message: message, rawSignature: signature)
                    }
                    return allValid
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == Array(repeating: true, count: 8))
    }
}
