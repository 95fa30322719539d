import PGPushTestSupport
import COpenSSL
import Foundation
import Testing
@testable import PushCrypto

/// OpenSSL's error queue is per thread and shared with the TLS layer, where a stale
/// entry turns the next SSL_get_error into SSL_ERROR_SSL. Every credential operation,
/// successful or not, must leave it empty.
@Suite("Credentials leave OpenSSL's error queue empty")
struct CryptoErrorQueueTests {
    @Test("after loading, signing, verifying and failing")
    func queueIsEmptyAfterEveryOperation() throws {
        let scratch = try ScratchDirectory()
        ERR_clear_error()
        func expectEmptyQueue(_ step: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let code = ERR_peek_error()
            #expect(code == 0, "\(step) left an OpenSSL error: \(code)", sourceLocation: sourceLocation)
            ERR_clear_error()
        }

        let keyPath = try CryptoTestKeys.p8(named: "key.p8", in: scratch)
        let key = try ES256PrivateKey(contentsOfFile: keyPath)
        expectEmptyQueue("loading a .p8")
        let signature = try key.sign([1, 2, 3])
        expectEmptyQueue("signing")
        let publicKey = try key.publicKey()
        expectEmptyQueue("deriving the public key")
        _ = publicKey.verify(message: [1, 2, 3], rawSignature: signature)
        expectEmptyQueue("verifying a good signature")
        _ = publicKey.verify(message: [1, 2, 4], rawSignature: signature)
        expectEmptyQueue("verifying a bad signature")
        _ = try? ES256PrivateKey(pemEncoded: "junk")
        expectEmptyQueue("failing to load a key")
        _ = try? ES256PrivateKey(contentsOfFile: try CryptoTestKeys.rsa(named: "rsa.pem", in: scratch))
        expectEmptyQueue("refusing an RSA key")

        let authority = try SelfSignedAuthority.generate()
        let issued = try authority.issueServerCertificate()
        expectEmptyQueue("issuing certificates")
        _ = try ClientIdentity.fromPEM(certificatePEM: issued.certificatePEM, privateKeyPEM: issued.privateKeyPEM)
        expectEmptyQueue("loading a PEM identity")

        try CryptoTestCertificates.authority(in: scratch)
        try CryptoTestCertificates.pushCertificate(named: "push", in: scratch)
        try CryptoTestCertificates.pkcs12(named: "push", password: "pw", in: scratch)
        try CryptoTestCertificates.pkcs12(named: "push", password: "pw", legacy: true, in: scratch)
        _ = try ClientIdentity.loadPKCS12(path: scratch.file("push.p12"), password: "pw")
        expectEmptyQueue("loading a PKCS#12 identity")
        _ = try? ClientIdentity.loadPKCS12(path: scratch.file("push.p12"), password: "wrong")
        expectEmptyQueue("a wrong PKCS#12 password")
        let combined = try scratch.write(try scratch.read("push.pem") + scratch.read("push.key"), to: "combined.pem")
        _ = try ClientIdentity.load(path: combined, password: nil)
        expectEmptyQueue("loading a combined PEM file")
        _ = try? ClientIdentity.loadPEM(certificatePath: scratch.file("push.pem"), keyPath: keyPath)
        expectEmptyQueue("a key that does not match")
        _ = try? ClientIdentity.loadPEM(certificatePath: keyPath, keyPath: keyPath)
        expectEmptyQueue("a file without a certificate")
        _ = try? ClientIdentity.loadPKCS12(path: combined, password: "pw")
        expectEmptyQueue("a PEM file read as PKCS#12")
        _ = try? authority.issueServerCertificate(dnsNames: ["bad name"])
        expectEmptyQueue("a refused certificate request")
    }
}
