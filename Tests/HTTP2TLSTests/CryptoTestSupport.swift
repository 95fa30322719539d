import Foundation
import Testing

/// A directory under the system temporary directory, removed when the test ends.
final class CryptoScratchDirectory {
    let path: String

    init() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-crypto-\(UUID().uuidString)")
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
    func write(_ text: String, to name: String) throws -> String {
        let target = file(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: target))
        return target
    }

    @discardableResult
    func write(_ bytes: [UInt8], to name: String) throws -> String {
        let target = file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: target))
        return target
    }

    func read(_ name: String) throws -> String {
        try String(contentsOfFile: file(name), encoding: .utf8)
    }
}

struct OpenSSLCommandError: Error, CustomStringConvertible {
    let arguments: [String]
    let status: Int32
    let output: String
    var description: String { "openssl \(arguments.joined(separator: " ")) exited \(status): \(output)" }
}

/// The `openssl` command-line tool: an implementation independent of the code under test.
enum OpenSSLCommand {
    struct Result {
        let status: Int32
        let output: String
    }

    /// Runs openssl in `directory`; stdout and stderr are merged.
    static func run(_ arguments: [String], in directory: String) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }

    /// Runs openssl and throws unless it succeeds; returns its output.
    @discardableResult
    static func succeed(_ arguments: [String], in directory: String) throws -> String {
        let result = try run(arguments, in: directory)
        guard result.status == 0 else {
            throw OpenSSLCommandError(arguments: arguments, status: result.status, output: result.output)
        }
        return result.output
    }
}

/// DER `ECDSA-Sig-Value` from raw r‖s, written here independently of the code under test
/// so that `openssl dgst -verify` checks our signatures with nothing of ours in between.
enum IndependentDER {
    static func ecdsaSignature(raw: [UInt8]) -> [UInt8] {
        precondition(raw.count == 64, "test input")
        let body = integer(Array(raw[0..<32])) + integer(Array(raw[32..<64]))
        return [0x30, UInt8(body.count)] + body
    }

    private static func integer(_ magnitude: [UInt8]) -> [UInt8] {
        var bytes = Array(magnitude.drop { $0 == 0 })
        if bytes.isEmpty { bytes = [0] }
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return [0x02, UInt8(bytes.count)] + bytes
    }
}

/// Key files made by the openssl CLI, as a developer would make or download them.
enum TestKeys {
    /// An unencrypted PKCS#8 EC key on `curve` (like Apple's .p8), written to `name`.
    @discardableResult
    static func p8(curve: String = "P-256", named name: String, in scratch: CryptoScratchDirectory) throws -> String {
        try OpenSSLCommand.succeed(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:\(curve)", "-out", "\(name).raw"], in: scratch.path)
        try OpenSSLCommand.succeed(["pkcs8", "-topk8", "-nocrypt", "-in", "\(name).raw", "-out", name], in: scratch.path)
        return scratch.file(name)
    }

    @discardableResult
    static func rsa(named name: String, in scratch: CryptoScratchDirectory) throws -> String {
        try OpenSSLCommand.succeed(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", name], in: scratch.path)
        return scratch.file(name)
    }

    /// A P-256 PKCS#8 key encrypted with `password`.
    @discardableResult
    static func encryptedP8(named name: String, password: String, in scratch: CryptoScratchDirectory) throws -> String {
        try OpenSSLCommand.succeed(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(name).raw"], in: scratch.path)
        try OpenSSLCommand.succeed(["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", "pass:\(password)", "-in", "\(name).raw", "-out", name], in: scratch.path)
        return scratch.file(name)
    }

    /// The base64 body lines of a PEM file: what must never leak into messages.
    static func secretLines(ofPEM text: String) -> [String] {
        text.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("-----") && $0.count > 20 }
    }
}
