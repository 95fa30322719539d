import Dispatch
import Foundation

/// How the simulators' commands wait: until SIGTERM or SIGINT, writing their report on
/// SIGUSR1 meanwhile.
enum StopSignals {
    /// Blocks until SIGTERM or SIGINT; each SIGUSR1 calls `report` and the wait goes on.
    static func wait(label: String, report: @escaping @Sendable () -> Void) {
        let finished = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: label)
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGTERM, SIGINT, SIGUSR1] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
            source.setEventHandler {
                if signalNumber == SIGUSR1 { report() } else { finished.signal() }
            }
            source.resume()
            sources.append(source)
        }
        finished.wait()
        sources.forEach { $0.cancel() }
    }
}

/// A simulator's JSON report (`--report`), pretty and with sorted keys so runs compare line by
/// line; nothing without a path. A failure to write is said, not thrown: the simulator is
/// stopping either way.
func writeReport(_ report: some Encodable, to path: String?, command: String) {
    guard let path else { return }
    do {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(report).write(to: URL(fileURLWithPath: path))
    } catch {
        printError("pgpush \(command): \(error)")
    }
}
