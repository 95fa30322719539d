import PGPushTestSupport
import Foundation
import Testing
@testable import PushCrypto

@Suite("Client identity (certificate authentication)")
struct CryptoClientIdentityTests {
    @Test("a PEM certificate and key load with subject and expiry as openssl reads them")
    func loadsPEMPair() throws {
        let scratch = try ScratchDirectory()
        try CryptoTestCertificates.authority(in: scratch)
        try CryptoTestCertificates.pushCertificate(
            named: "push", days: 365, topics: [("com.example.app", "app"), ("com.example.app.voip", "voip")],
            environmentOIDs: ["1.2.840.113635.100.6.3.1", "1.2.840.113635.100.6.3.2"], in: scratch)
        let identity = try ClientIdentity.loadPEM(certificatePath: scratch.file("push.pem"), keyPath: scratch.file("push.key"))

        #expect(identity.subject.contains("CN=Apple Push Services: com.example.app"))
        #expect(identity.subject.contains("UID=com.example.app"))
        #expect(identity.subject.contains("OU=ABCDE12345"))
        let expected = try #require(try CryptoTestCertificates.notAfter(of: "push.pem", in: scratch))
        #expect(identity.notAfter == expected)
        #expect(identity.daysUntilExpiry(now: expected.addingTimeInterval(-10 * 86_400 - 60)) == 10)
        #expect(identity.daysUntilExpiry(now: expected.addingTimeInterval(-30)) == 0)
        #expect(identity.daysUntilExpiry(now: expected.addingTimeInterval(86_400 + 1)) == -2)
        #expect(!identity.isExpired(now: Date()))
        try identity.validate(now: Date())
        #expect(identity.description.contains("Apple Push Services"))
    }

    @Test("load(path:password:) takes either a PEM file holding certificate and key, or a PKCS#12 file")
    func loadDetectsFormat() throws {
        let scratch = try ScratchDirectory()
        try CryptoTestCertificates.authority(in: scratch)
        try CryptoTestCertificates.pushCertificate(named: "push", in: scratch)
        try CryptoTestCertificates.pkcs12(named: "push", password: "pw", in: scratch)
        let combined = try scratch.write(try scratch.read("push.pem") + scratch.read("push.key"), to: "combined.pem")
        #expect(try ClientIdentity.load(path: combined, password: nil).subject.contains("com.example.app"))
        #expect(try ClientIdentity.load(path: scratch.file("push.p12"), password: "pw").subject.contains("com.example.app"))
        #expect(throws: CredentialError.wrongPassword(source: scratch.file("push.p12"))) {
            try ClientIdentity.load(path: scratch.file("push.p12"), password: "nope")
        }
        #expect(throws: CredentialError.notAPrivateKey(source: scratch.file("push.pem"))) {
            try ClientIdentity.load(path: scratch.file("push.pem"), password: nil)
        }
    }

    @Test("a PKCS#12 file without a private key is refused with that reason")
    func pkcs12WithoutKey() throws {
        let scratch = try ScratchDirectory()
        try CryptoTestCertificates.authority(in: scratch)
        try CryptoTestCertificates.pushCertificate(named: "push", in: scratch)
        try OpenSSLCommand.succeed(["pkcs12", "-export", "-nokeys", "-in", "push.pem", "-passout", "pass:pw", "-out", "certonly.p12"], in: scratch.path)
        let path = scratch.file("certonly.p12")
        #expect(throws: CredentialError.malformedPKCS12(source: path, detail: "it holds no private key")) {
            try ClientIdentity.loadPKCS12(path: path, password: "pw")
        }
    }

    @Test("certificate and key in one PEM file")
    func loadsCombinedPEM() throws {
        let scratch = try ScratchDirectory()
        try CryptoTestCertificates.authority(in: scratch)
        try CryptoTestCertificates.pushCertificate(named: "push", in: scratch)
        let combined = try scratch.write(try scratch.read("push.pem") + scratch.read("push.key"), to: "combined.pem")
        let identity = try ClientIdentity.loadPEM(certificatePath: combined, keyPath: combined)
        #expect(identity.subject.contains("com.example.app"))
    }

    @Test("an encrypted PEM key opens with its password; a wrong password is named as such")
    func encryptedPEMKey() throws {
        let scratch = try ScratchDirectory()
        try CryptoTestCertificates.authority(in: scratch)
        try CryptoTestCertificates.pushCertificate(named: "push", in: scratch)
        try OpenSSLCommand.succeed(["pkey", "-in", "push.key", "-aes256", "-passout", "pass:s3cret", "-out", "encrypted.key"], in: scratch.path)
        let certificate = scratch.file("push.pem")
        let key = scratch.file("encrypted.key")
        let identity = try ClientIdentity.loadPEM(certificatePath: certificate, keyPath: key, password: "s3cret")
        #expect(identity.subject.contains("com.example.app"))
        #expect(throws: CredentialError.wrongPassword(source: key)) {
            try ClientIdentity.loadPEM(certificatePath: certificate, keyPath: key, password: "guess")
        }
        #expect(throws: CredentialError.encryptedPrivateKey(source: key)) {
            try ClientIdentity.loadPEM(certificatePath: certificate, keyPath: key)
        }
    }

    @Test("an identity can be made from PEM text in memory, as the simulator does with its generated certificate")
    func fromPEMText() throws {
        let authority = try SelfSignedAuthority.generate()
        let issued = try authority.issueServerCertificate()
        let identity = try ClientIdentity.fromPEM(certificatePEM: issued.certificatePEM, privateKeyPEM: issued.privateKeyPEM)
        #expect(identity.subject == "CN=localhost")
        let other = try authority.issueServerCertificate()
        #expect(throws: CredentialError.keyDoesNotMatchCertificate(certificate: "certificate PEM", key: "private key PEM")) {
            try ClientIdentity.fromPEM(certificatePEM: issued.certificatePEM, privateKeyPEM: other.privateKeyPEM)
        }
    }

    @Test("a PKCS#12 file loads with its password; a wrong or missing password is named as such")
    func loadsPKCS12() throws {
        let scratch = try ScratchDirectory()
        try CryptoTestCertificates.authority(in: scratch)
        try CryptoTestCertificates.pushCertificate(named: "push", in: scratch)
        try CryptoTestCertificates.pkcs12(named: "push", password: "correct horse", in: scratch)
        let path = scratch.file("push.p12")

        let identity = try ClientIdentity.loadPKCS12(path: path, password: "correct horse")
        #expect(identity.subject.contains("CN=Apple Push Services: com.example.app"))
        #expect(identity.subjectUserID == "com.example.app")

        let wrong = #expect(throws: CredentialError.self) { try ClientIdentity.loadPKCS12(path: path, password: "battery staple") }
        #expect(wrong == .wrongPassword(source: path))
        #expect(wrong?.description.contains("battery") == false)
        #expect(throws: CredentialError.wrongPassword(source: path)) { try ClientIdentity.loadPKCS12(path: path, password: nil) }
    }

    @Test("a PKCS#12 file exported without a password opens with no password")
    func loadsPasswordlessPKCS12() throws {
        let scratch = try ScratchDirectory()
        try CryptoTestCertificates.authority(in: scratch)
        try CryptoTestCertificates.pushCertificate(named: "push", in: scratch)
        try CryptoTestCertificates.pkcs12(named: "push", password: "", in: scratch)
        let identity = try ClientIdentity.loadPKCS12(path: scratch.file("push.p12"), password: nil)
        #expect(identity.subject.contains("com.example.app"))
        _ = try ClientIdentity.loadPKCS12(path: scratch.file("push.p12"), password: "")
    }

    @Test("a legacy (RC2/3DES) PKCS#12 file, as older Keychain exports are, loads too")
    func loadsLegacyPKCS12() throws {
        let scratch = try ScratchDirectory()
        try CryptoTestCertificates.authority(in: scratch)
        try CryptoTestCertificates.pushCertificate(named: "push", in: scratch)
        try CryptoTestCertificates.pkcs12(named: "push", password: "old", legacy: true, in: scratch)
        let dump = try OpenSSLCommand.succeed(["pkcs12", "-in", "push.p12", "-info", "-noout", "-passin", "pass:old", "-legacy"], in: scratch.path)
        #expect(dump.contains("RC2") || dump.contains("3DES") || dump.contains("pbeWithSHA1"))
        let identity = try ClientIdentity.loadPKCS12(path: scratch.file("push.p12"), password: "old")
        #expect(identity.subject.contains("com.example.app"))
    }

    @Test("an expired certificate loads, reports itself expired, and validate refuses it")
    func expiredCertificate() throws {
        let scratch = try ScratchDirectory()
        try CryptoTestCertificates.backdatedCertificate(named: "old", start: "20200101000000Z", end: "20210101000000Z", in: scratch)
        let identity = try ClientIdentity.loadPEM(certificatePath: scratch.file("old.pem"), keyPath: scratch.file("old.key"))
        let notAfter = Date(timeIntervalSince1970: 1_609_459_200)
        #expect(identity.notAfter == notAfter)
        #expect(identity.notBefore == Date(timeIntervalSince1970: 1_577_836_800))
        #expect(identity.isExpired(now: Date()))
        #expect(!identity.isExpired(now: notAfter.addingTimeInterval(-1)))
        #expect(identity.daysUntilExpiry(now: Date()) < -365)
        let error = #expect(throws: CredentialError.self) { try identity.validate(now: Date()) }
        #expect(error == .certificateExpired(subject: identity.subject, notAfter: notAfter))
        #expect(error?.description.contains("expired on 2021-01-01") == true)
        #expect(throws: CredentialError.certificateNotYetValid(subject: identity.subject, notBefore: identity.notBefore)) {
            try identity.validate(now: Date(timeIntervalSince1970: 1_500_000_000))
        }
    }

    @Test("a key that belongs to another certificate is refused")
    func mismatchedKey() throws {
        let scratch = try ScratchDirectory()
        try CryptoTestCertificates.authority(in: scratch)
        try CryptoTestCertificates.pushCertificate(named: "push", in: scratch)
        try CryptoTestCertificates.pushCertificate(named: "other", in: scratch)
        let certificate = scratch.file("push.pem")
        let key = scratch.file("other.key")
        #expect(throws: CredentialError.keyDoesNotMatchCertificate(certificate: certificate, key: key)) {
            try ClientIdentity.loadPEM(certificatePath: certificate, keyPath: key)
        }
    }

    @Test("missing, unreadable and malformed files are told apart")
    func fileErrors() throws {
        let scratch = try ScratchDirectory()
        try CryptoTestCertificates.authority(in: scratch)
        try CryptoTestCertificates.pushCertificate(named: "push", in: scratch)
        let missing = scratch.file("absent.p12")
        #expect(throws: CredentialError.fileNotFound(path: missing)) { try ClientIdentity.loadPKCS12(path: missing, password: "x") }
        #expect(throws: CredentialError.fileNotFound(path: missing)) {
            try ClientIdentity.loadPEM(certificatePath: scratch.file("push.pem"), keyPath: missing)
        }
        #expect(throws: CredentialError.fileUnreadable(path: scratch.path, reason: "it is a directory")) {
            try ClientIdentity.loadPKCS12(path: scratch.path, password: nil)
        }
        let garbage = try scratch.write([0x30, 0x82, 0x01, 0x00, 0x02, 0x01], to: "garbage.p12")
        let malformed = #expect(throws: CredentialError.self) { try ClientIdentity.loadPKCS12(path: garbage, password: "x") }
        guard case .malformedPKCS12(let source, _) = malformed else {
            Issue.record("expected malformedPKCS12, got \(String(describing: malformed))")
            return
        }
        #expect(source == garbage)

        let notCertificate = scratch.file("push.key")
        let badCertificate = #expect(throws: CredentialError.self) {
            try ClientIdentity.loadPEM(certificatePath: notCertificate, keyPath: notCertificate)
        }
        guard case .malformedCertificate(let certificateSource, _) = badCertificate else {
            Issue.record("expected malformedCertificate, got \(String(describing: badCertificate))")
            return
        }
        #expect(certificateSource == notCertificate)

        let certificate = scratch.file("push.pem")
        #expect(throws: CredentialError.notAPrivateKey(source: certificate)) {
            try ClientIdentity.loadPEM(certificatePath: certificate, keyPath: certificate)
        }
        try OpenSSLCommand.succeed(["pkey", "-in", "push.key", "-aes256", "-passout", "pass:pw", "-out", "encrypted.key"], in: scratch.path)
        #expect(throws: CredentialError.encryptedPrivateKey(source: scratch.file("encrypted.key"))) {
            try ClientIdentity.loadPEM(certificatePath: certificate, keyPath: scratch.file("encrypted.key"))
        }
    }
}
