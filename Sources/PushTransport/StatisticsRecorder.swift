import Locking
import PGPushCore

/// The client's counters behind a lock, updated from any task.
package final class StatisticsRecorder: Sendable {
    private let counters = Locked(SenderStatistics())

    package init() {}

    package func update(_ change: (inout SenderStatistics) -> Void) {
        counters.withLock { change(&$0) }
    }

    package var snapshot: SenderStatistics { counters.withLock { $0 } }

    /// Counts a request that got no answer, by whether the service may have processed it.
    package func countFailure(_ failure: DeliveryFailure) {
        update {
            if failure.processing == .notProcessed { $0.failuresNotProcessed += 1 } else { $0.failuresMayHaveBeenProcessed += 1 }
        }
    }

    /// Counts it and returns its delivery under the shared no-answer rule (`Verdict.noAnswer`),
    /// for a service whose policy reads nothing more into it.
    package func noAnswer(_ failure: DeliveryFailure, resends: Int, latency: Duration) -> Delivery {
        countFailure(failure)
        return Delivery(verdict: .noAnswer(failure), reason: failure.reasonText, failure: failure, resends: resends, latency: latency)
    }
}
