import Locking

/// The client's counters behind a lock, updated from any task.
final class StatisticsRecorder: Sendable {
    private let counters = Locked(APNsClientStatistics())

    func update(_ change: (inout APNsClientStatistics) -> Void) {
        counters.withLock { change(&$0) }
    }

    var snapshot: APNsClientStatistics { counters.withLock { $0 } }
}
