import Foundation
// Re-exported: the test targets start processes through this module, which they all
// depend on, rather than each depending on Spawn as well.
@_exported import Spawn

extension ChildProcess {
    /// The `pgpush` binary built beside the test bundle, if it exists.
    public static var pgpushBinary: String? {
        let candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
                          URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().deletingLastPathComponent()]
            .map { $0.appendingPathComponent("pgpush").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Waits until the output contains `text` (a "listening" line, say).
    public func waitForOutput(containing text: String, timeout: Duration) async -> Bool {
        (try? await eventually(timeout: timeout) { output.contains(text) }) ?? false
    }
}
