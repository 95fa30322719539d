import Locking
import PushTransport

/// The client's counters behind a lock, updated from any task.
final class StatisticsRecorder: Sendable {
    private let counters = Locked(SenderStatistics())

    func update(_ change: (inout SenderStatistics) -> Void) {
        counters.withLock { change(&$0) }
    }

    var snapshot: SenderStatistics { counters.withLock { $0 } }
}
