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
