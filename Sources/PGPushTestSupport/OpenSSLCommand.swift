import Foundation

/// A folder under the system temporary folder for one test's files, removed with it.
package final class ScratchDirectory: Sendable {
    package let path: String

    package init() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-scratch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        path = url.path
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    package func file(_ name: String) -> String {
        path + "/" + name
    }

    @discardableResult
    package func write(_ text: String, to name: String) throws -> String {
        try write(Array(text.utf8), to: name)
    }

    @discardableResult
    package func write(_ bytes: [UInt8], to name: String) throws -> String {
        let target = file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: target))
        return target
    }

    package func read(_ name: String) throws -> String {
        try String(contentsOfFile: file(name), encoding: .utf8)
    }
}

package struct OpenSSLCommandError: Error, CustomStringConvertible {
    package let arguments: [String]
    package let status: Int32
    package let output: String
    package var description: String { "openssl \(arguments.joined(separator: " ")) exited \(status): \(output)" }
}

/// The `openssl` command-line tool: an implementation independent of the code under test,
/// to make keys and certificates the way a developer would and to check our signatures.
package enum OpenSSLCommand {
    package struct Result {
        package let status: Int32
        package let output: String
    }

    /// Runs openssl in `directory`; stdout and stderr are merged.
    package static func run(_ arguments: [String], in directory: String) throws -> Result {
        let (status, output) = try ChildProcess.runToCompletion("/usr/bin/openssl", arguments, in: directory)
        return Result(status: status, output: output)
    }

    /// Runs openssl and throws unless it succeeds; returns its output.
    @discardableResult
    package static func succeed(_ arguments: [String], in directory: String) throws -> String {
        let result = try run(arguments, in: directory)
        guard result.status == 0 else {
            throw OpenSSLCommandError(arguments: arguments, status: result.status, output: result.output)
        }
        return result.output
    }
}

/// DER `ECDSA-Sig-Value` from raw r‖s, written here independently of the code under test
/// so that `openssl dgst -verify` checks our signatures with nothing of ours in between.
package enum IndependentDER {
    package static func ecdsaSignature(raw: [UInt8]) -> [UInt8] {
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
