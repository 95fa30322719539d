import Locking
import PushQueue

/// Collects outcomes and writes them in batches: one round trip per flush,
/// at least every `interval`, sooner when `batchSize` outcomes are waiting.
///
/// While PostgreSQL is unreachable the outcomes stay here and the writer
/// retries with backoff; nothing is dropped. Their rows keep their leases
/// (renewal fails too), so if this process dies meanwhile, the rows are
/// rescued and sent again: at-least-once.
final class OutcomeWriter: Sendable {
    private let pending = Locked<[Outcome]>([])
    /// Row ids with an outcome added and not yet written (waiting, or in the batch being
    /// written), with how many: the rescue must not take these rows back.
    private let unwritten = Locked<[Int64: Int]>([:])
    private let doorbell = Doorbell()
    private let database: DatabaseExecutor
    private let interval: Duration
    private let batchSize: Int
    private let log: Log
    private let repeated: RepeatedWarnings
    /// Called with the number of outcomes whose lease no longer held.
    private let onStale: @Sendable (Int) -> Void

    init(database: DatabaseExecutor, interval: Duration, batchSize: Int = 2000, log: Log, repeated: RepeatedWarnings,
         onStale: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.repeated = repeated
        self.database = database
        self.interval = interval
        self.batchSize = batchSize
        self.log = log
        self.onStale = onStale
    }

    func add(_ outcome: Outcome) {
        unwritten.withLock { $0[outcome.id, default: 0] += 1 }
        let count = pending.withLock { pending in
            pending.append(outcome)
            return pending.count
        }
        if count == batchSize { doorbell.ring() }
    }

    var backlog: Int { pending.withLock { $0.count } }

    /// The rows whose outcome is here and not yet in the database.
    var unwrittenIDs: [Int64] { unwritten.withLock { Array($0.keys) } }

    /// Flushes until `shouldStop()` and nothing is pending (or `giveUpAt` passes).
    func run(shouldStop: @escaping @Sendable () -> Bool, giveUpAt: @escaping @Sendable () -> ContinuousClock.Instant?) async {
        var backoff = Duration.milliseconds(100)
        while true {
            let batch = pending.withLock { pending -> [Outcome] in
                let taken = Array(pending.prefix(batchSize))
                pending.removeFirst(taken.count)
                return taken
            }
            if batch.isEmpty {
                if shouldStop() { return }
                await doorbell.wait(timeout: interval)
                continue
            }
            do {
                let written = try await database.run { queue in try queue.complete(batch) }
                unwritten.withLock { unwritten in
                    for outcome in batch {
                        let left = unwritten[outcome.id, default: 1] - 1
                        unwritten[outcome.id] = left > 0 ? left : nil
                    }
                }
                backoff = .milliseconds(100)
                repeated.recovered("outcome_write_failed")
                if written.count < batch.count {
                    onStale(batch.count - written.count)
                    log.warning("outcomes_not_applied", ["count": batch.count - written.count,
                                                         "why": "lease taken over or row cancelled"])
                }
                if batch.count < batchSize && !shouldStop() { await doorbell.wait(timeout: interval) }
            } catch {
                pending.withLock { $0.insert(contentsOf: batch, at: 0) }
                if let deadline = giveUpAt(), ContinuousClock.now >= deadline {
                    log.error("outcomes_abandoned", ["count": backlog, "error": error,
                                                     "why": "database unreachable at shutdown; leases will return the rows"])
                    return
                }
                repeated.warning("outcome_write_failed", ["count": batch.count, "retry_in": backoff, "error": error])
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    func wake() { doorbell.ring() }
}
