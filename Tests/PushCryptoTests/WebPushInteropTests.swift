import Foundation
import PGPushTestSupport
@testable import PushCrypto
import Testing

/// pgpush's Web Push messages against an implementation it did not write: the `http_ece`
/// Python package (RFC 8188 and RFC 8291, as web-push libraries use it), pinned and installed
/// into `.build/deploy-tools/venv` by deploy/local/install-dependencies.sh. What pgpush seals,
/// http_ece opens; what http_ece seals for a subscription, pgpush's simulator side opens.
struct WebPushInteropTests {
    static let python = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/deploy-tools/venv/bin/python").path

    /// In CI the package must be there (the test then fails rather than being skipped).
    static let runs = ProcessInfo.processInfo.environment["CI"] == "true"
        || (try? ChildProcess.runToCompletion(python, ["-c", "import http_ece"], in: "/tmp"))?.0 == 0

    static let script = """
        import base64, sys, http_ece
        from cryptography.hazmat.primitives.asymmetric import ec
        def raw(text): return base64.urlsafe_b64decode(text + '=' * (-len(text) % 4))
        mode, source, target, key, auth = sys.argv[1:6]
        data = open(source, 'rb').read()
        if mode == 'open':
            browser = ec.derive_private_key(int.from_bytes(raw(key), 'big'), ec.SECP256R1())
            out = http_ece.decrypt(data, private_key=browser, auth_secret=raw(auth), version='aes128gcm')
        else:
            out = http_ece.encrypt(data, private_key=ec.generate_private_key(ec.SECP256R1()), dh=raw(key),
                                   auth_secret=raw(auth), version='aes128gcm')
        open(target, 'wb').write(out)
        """

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Runs the script: `open` (key = the browser's private key) or `seal` (key = its public key).
    static func httpECE(_ mode: String, _ input: [UInt8], key: [UInt8], auth: [UInt8], in scratch: ScratchDirectory) throws -> [UInt8] {
        let script = try scratch.write(Self.script, to: "ece.py")
        let source = try scratch.write(input, to: "in"), target = scratch.file("out")
        let (status, output) = try ChildProcess.runToCompletion(
            python, [script, mode, source, target, base64URL(key), base64URL(auth)], in: scratch.path)
        #expect(status == 0, "http_ece \(mode): \(output)")
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: target)))
    }

    @Test(.enabled(if: runs, "needs http_ece in .build/deploy-tools/venv (deploy/local/install-dependencies.sh)"))
    func whatPgpushSealsHttpECEOpens() throws {
        let scratch = try ScratchDirectory()
        let browser = try P256KeyAgreementKey.generate()
        let auth = (0..<16).map { UInt8($0 * 7 + 3) }
        for payload in [#"{"title":"Hello","body":"from pgpush"}"#, "", String(repeating: "é", count: 1996)] {
            let plaintext = Array(payload.utf8)
            let body = try WebPushEncryption.seal(plaintext, p256dh: browser.publicKey, auth: auth)
            #expect(try Self.httpECE("open", body, key: browser.privateKeyBytes(), auth: auth, in: scratch) == plaintext)
        }
    }

    @Test(.enabled(if: runs, "needs http_ece in .build/deploy-tools/venv (deploy/local/install-dependencies.sh)"))
    func whatHttpECESealsPgpushOpens() throws {
        let scratch = try ScratchDirectory()
        let browser = try P256KeyAgreementKey.generate()
        let auth = (0..<16).map { UInt8(255 - $0) }
        let plaintext = Array(#"{"data":{"n":"42"}}"#.utf8)
        let body = try Self.httpECE("seal", plaintext, key: browser.publicKey, auth: auth, in: scratch)
        #expect(try WebPushEncryption.open(body, recipient: browser, auth: auth) == plaintext)
    }
}
