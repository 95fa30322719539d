import Foundation
import PGPushTestSupport
import Locking

/// A directory under the system temporary directory, removed when the test ends.
final class CredentialsScratchDirectory {
    let path: String

    init() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-jwt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        path = url.path
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    func file(_ name: String) -> String {
        path + "/" + name
    }

    @discardableResult
    func write(_ bytes: [UInt8], to name: String) throws -> String {
        let target = file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: target))
        return target
    }
}

/// The `openssl` command-line tool, an implementation independent of the code under test.
enum OpenSSLTool {
    struct Result {
        let status: Int32
        let output: String
    }

    static func run(_ arguments: [String], in directory: String) throws -> Result {
        let (status, output) = try ChildProcess.runToCompletion("/usr/bin/openssl", arguments, in: directory)
        return Result(status: status, output: output)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func succeed(_ arguments: [String], in directory: String) throws {
        let result = try run(arguments, in: directory)
        guard result.status == 0 else {
            throw Failure(description: "openssl \(arguments.joined(separator: " ")): \(result.output)")
        }
    }

    /// A P-256 .p8 key made the way a developer would, and its public key as `public.pem`.
    static func makeP8(named name: String, in scratch: CredentialsScratchDirectory) throws -> String {
        try succeed(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(name).raw"], in: scratch.path)
        try succeed(["pkcs8", "-topk8", "-nocrypt", "-in", "\(name).raw", "-out", name], in: scratch.path)
        try succeed(["pkey", "-in", name, "-pubout", "-out", "public.pem"], in: scratch.path)
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

    /// DER `ECDSA-Sig-Value` from raw r‖s.
    static func derSignature(raw: [UInt8]) -> [UInt8] {
        func integer(_ magnitude: ArraySlice<UInt8>) -> [UInt8] {
            var bytes = Array(magnitude.drop { $0 == 0 })
            if bytes.isEmpty { bytes = [0] }
            if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
            return [0x02, UInt8(bytes.count)] + bytes
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }

    /// Runs `openssl dgst -sha256 -verify public.pem` over the token's signing input.
    static func verifyWithOpenSSL(_ jwt: String, in scratch: CredentialsScratchDirectory) throws -> Bool {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let raw = decode(parts[2]), raw.count == 64 else { return false }
        try scratch.write(Array((parts[0] + "." + parts[1]).utf8), to: "signing-input")
        try scratch.write(derSignature(raw: raw), to: "signature.der")
        let result = try OpenSSLTool.run(
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
