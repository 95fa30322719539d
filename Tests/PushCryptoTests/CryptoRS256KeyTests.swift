import PGPushTestSupport
import Foundation
import Testing
@testable import PushCrypto

@Suite("RS256 keys (service accounts)")
struct CryptoRS256KeyTests {
    @Test("a signature of an openssl-made key verifies with openssl dgst; a changed message does not")
    func signatureVerifiesWithOpenSSLCommand() throws {
        let scratch = try ScratchDirectory()
        let keyPath = try CryptoTestKeys.rsa(named: "service-account.pem", in: scratch)
        try OpenSSLCommand.succeed(["pkey", "-in", keyPath, "-pubout", "-out", "public.pem"], in: scratch.path)

        let key = try RS256PrivateKey(pemEncoded: scratch.read("service-account.pem"), source: keyPath)
        let message = Array("eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzZW5kZXJAZXhhbXBsZSJ9".utf8)
        let signature = try key.sign(message)
        #expect(signature.count == 256)

        try scratch.write(message, to: "message")
        try scratch.write(signature, to: "signature.bin")
        // RSASSA-PKCS1-v1_5 is openssl dgst's default for an RSA key.
        let verified = try OpenSSLCommand.run(
            ["dgst", "-sha256", "-verify", "public.pem", "-signature", "signature.bin", "message"], in: scratch.path)
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output.contains("Verified OK"))

        try scratch.write(message + [0x21], to: "message")
        let tampered = try OpenSSLCommand.run(
            ["dgst", "-sha256", "-verify", "public.pem", "-signature", "signature.bin", "message"], in: scratch.path)
        #expect(tampered.status != 0)
    }

    @Test("PKCS#1 (BEGIN RSA PRIVATE KEY) and PKCS#8 forms of one key load and sign alike")
    func bothPEMForms() throws {
        let scratch = try ScratchDirectory()
        let pkcs8Path = try CryptoTestKeys.rsa(named: "pkcs8.pem", in: scratch)
        try OpenSSLCommand.succeed(["pkey", "-in", pkcs8Path, "-traditional", "-out", "pkcs1.pem"], in: scratch.path)
        let pkcs1 = try scratch.read("pkcs1.pem")
        #expect(pkcs1.hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
        let message = Array("header.claims".utf8)
        // PKCS#1 v1.5 signatures are deterministic: the same key signs the same bytes.
        let fromPKCS8 = try RS256PrivateKey(pemEncoded: scratch.read("pkcs8.pem")).sign(message)
        let fromPKCS1 = try RS256PrivateKey(pemEncoded: pkcs1).sign(message)
        #expect(fromPKCS8 == fromPKCS1)
    }

    @Test("verify accepts only the right message and signature; a generated key round-trips through PEM")
    func publicKeyVerification() throws {
        let key = try RS256PrivateKey.generate()
        let message = Array("header.claims".utf8)
        let signature = try key.sign(message)
        let publicKey = try key.publicKey()
        #expect(publicKey.verify(message: message, signature: signature))
        #expect(!publicKey.verify(message: message + [0], signature: signature))
        var flipped = signature
        flipped[10] ^= 1
        #expect(!publicKey.verify(message: message, signature: flipped))
        #expect(!publicKey.verify(message: message, signature: [1, 2, 3]))

        let reloaded = try RS256PrivateKey(pemEncoded: key.pkcs8PEM())
        #expect(try reloaded.sign(message) == signature)
        #expect(try RS256PublicKey(pemEncoded: publicKey.pemEncoded()).verify(message: message, signature: signature))
    }

    @Test("an EC key, a 1024-bit key, an encrypted key and text that is no key are refused when loaded")
    func wrongKeysRefused() throws {
        let scratch = try ScratchDirectory()
        try CryptoTestKeys.p8(named: "ec.p8", in: scratch)
        #expect(throws: CredentialError.wrongKeyType(source: "ec", found: "EC", needed: RSAKeyCheck.needed)) {
            try RS256PrivateKey(pemEncoded: scratch.read("ec.p8"), source: "ec")
        }
        try OpenSSLCommand.succeed(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", "small.pem"],
                                   in: scratch.path)
        #expect(throws: CredentialError.wrongKeyType(source: "small", found: "1024-bit RSA", needed: RSAKeyCheck.needed)) {
            try RS256PrivateKey(pemEncoded: scratch.read("small.pem"), source: "small")
        }
        let rsa = try CryptoTestKeys.rsa(named: "plain.pem", in: scratch)
        try OpenSSLCommand.succeed(["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", "pass:secret", "-in", rsa, "-out", "encrypted.pem"],
                                   in: scratch.path)
        #expect(throws: CredentialError.encryptedPrivateKey(source: "encrypted")) {
            try RS256PrivateKey(pemEncoded: scratch.read("encrypted.pem"), source: "encrypted")
        }
        #expect(throws: CredentialError.notAPrivateKey(source: "junk")) {
            try RS256PrivateKey(pemEncoded: "-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n", source: "junk")
        }
    }

    @Test("descriptions and errors name the algorithm and size, never key material")
    func noSecretsInText() throws {
        let scratch = try ScratchDirectory()
        try CryptoTestKeys.rsa(named: "key.pem", in: scratch)
        let pem = try scratch.read("key.pem")
        let key = try RS256PrivateKey(pemEncoded: pem)
        #expect(key.description == "RS256PrivateKey(RSA 2048)")
        let texts = [key.description, try key.publicKey().description]
        for line in CryptoTestKeys.secretLines(ofPEM: pem) {
            #expect(!texts.contains { $0.contains(line) })
        }
    }
}
