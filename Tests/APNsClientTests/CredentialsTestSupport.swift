import Foundation
import PGPushTestSupport
import Locking

/// Keys made with the `openssl` tool, an implementation independent of the code under test.
enum OpenSSLTool {
    /// A P-256 .p8 key made the way a developer would, and its public key as `public.pem`.
    static func makeP8(named name: String, in scratch: ScratchDirectory) throws -> String {
        try OpenSSLCommand.succeed(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(name).raw"],
                                   in: scratch.path)
        try OpenSSLCommand.succeed(["pkcs8", "-topk8", "-nocrypt", "-in", "\(name).raw", "-out", name], in: scratch.path)
        try OpenSSLCommand.succeed(["pkey", "-in", name, "-pubout", "-out", "public.pem"], in: scratch.path)
        return scratch.file(name)
    }
}

/// JWT pieces decoded with Foundation only (standard base64 after undoing the URL alphabet),
/// so the checks do not rely on the project's own Base64URL.
enum IndependentJWT {
    static func decode(_ part: Substring) -> [UInt8]? {
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text).map(Array.init)
    }

    /// Runs `openssl dgst -sha256 -verify public.pem` over the token's signing input.
    static func verifyWithOpenSSL(_ jwt: String, in scratch: ScratchDirectory) throws -> Bool {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let raw = decode(parts[2]), raw.count == 64 else { return false }
        try scratch.write(Array((parts[0] + "." + parts[1]).utf8), to: "signing-input")
        try scratch.write(IndependentDER.ecdsaSignature(raw: raw), to: "signature.der")
        let result = try OpenSSLCommand.run(
            ["dgst", "-sha256", "-verify", "public.pem", "-signature", "signature.der", "signing-input"], in: scratch.path)
        return result.status == 0 && result.output.contains("Verified OK")
    }
}

/// A clock that moves only when the test says so.
final class ManualClock: Sendable {
    private let current: Locked<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Locked(start)
    }

    func now() -> Date {
        current.withLock { $0 }
    }

    func advance(minutes: Double) {
        current.withLock { $0 = $0.addingTimeInterval(minutes * 60) }
    }
}
