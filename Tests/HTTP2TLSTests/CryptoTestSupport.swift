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
