import Foundation
// Re-exported: the test targets start processes through this module, which they all
// depend on, rather than each depending on Spawn as well.
@_exported import Spawn

extension ChildProcess {
    /// The `pgpush` binary the tests run: `PGPUSH_BINARY` when it is set (nil when that is
    /// no executable), else the one built beside the test runner, else the package's
    /// `.build/debug/pgpush`; nil when it is not built.
    package static let pgpushBinary: String? = {
        if let configured = ProcessInfo.processInfo.environment["PGPUSH_BINARY"] {
            return FileManager.default.isExecutableFile(atPath: configured) ? configured : nil
        }
        var candidates: [URL] = []
        var directory = URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent()
        // On Linux the runner is …/debug/pgpushPackageTests.xctest; elsewhere it may sit inside a bundle.
        for _ in 0..<4 {
            candidates.append(directory.appendingPathComponent("pgpush"))
            directory = directory.deletingLastPathComponent()
        }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(packageRoot.appendingPathComponent(".build/debug/pgpush"))
        return candidates.map(\.path).first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// Waits until the output contains `text` (a "listening" line, say).
    package func waitForOutput(containing text: String, timeout: Duration) async -> Bool {
        (try? await eventually(timeout: timeout) { output.contains(text) }) ?? false
    }
}
