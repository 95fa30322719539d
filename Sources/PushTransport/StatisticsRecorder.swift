import Locking

/// The client's counters behind a lock, updated from any task.
package final class StatisticsRecorder: Sendable {
    private let counters = Locked(SenderStatistics())

    package init() {}

    package func update(_ change: (inout SenderStatistics) -> Void) {
        counters.withLock { change(&$0) }
    }

    package var snapshot: SenderStatistics { counters.withLock { $0 } }
}
