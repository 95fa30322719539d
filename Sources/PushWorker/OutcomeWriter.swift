import Locking
import Postgres
import PushQueue

/// Collects outcomes and writes them in batches: one round trip per flush,
/// at least every `interval`, sooner when `batchSize` outcomes are waiting.
///
/// While PostgreSQL is unreachable (or times the statement out, or holds a lock) the
/// outcomes stay here and the writer retries with backoff; nothing is dropped. A
/// statement refused for one row's values is split until that row is set apart. Their rows keep their leases
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

    /// Flushes until `shouldStop()` and nothing is pending (or `giveUpAt` passes). Once
    /// `shouldStop()` is true it must stay true, and no outcome may be added after it.
    func run(shouldStop: @escaping @Sendable () -> Bool, giveUpAt: @escaping @Sendable () -> ContinuousClock.Instant?) async {
        var backoff = Duration.milliseconds(100)
        var size = AdaptiveBatchSize(largest: batchSize)
        while true {
            // Asked before taking the batch: when it says stop, every outcome has been added,
            // so an empty batch taken after it means nothing is left.
            let stopping = shouldStop()
            let batch = pending.withLock { pending -> [Outcome] in
                let taken = Array(pending.prefix(size.current))
                pending.removeFirst(taken.count)
                return taken
            }
            if batch.isEmpty {
                if stopping { return }
                await doorbell.wait(timeout: interval)
                continue
            }
            do {
                try await write(batch)
                backoff = .milliseconds(100)
                size.succeeded()
                repeated.recovered("outcome_write_failed")
                if size.isFull { repeated.recovered("outcome_write_timed_out") }
                if batch.count < batchSize && !shouldStop() { await doorbell.wait(timeout: interval) }
            } catch let error as PostgresError where error.sqlState == PostgresError.queryCanceled
                                                     && !(giveUpAt().map { ContinuousClock.now >= $0 } ?? false) {
                // Not an outage: the batch was too big for the statement timeout. Smaller at once.
                size.timedOut()
                repeated.warning("outcome_write_timed_out", ["next_batch_rows": size.current, "error": error,
                                                             "why": "the database cancelled the write for time (statement_timeout?)"])
            } catch {
                if let deadline = giveUpAt(), ContinuousClock.now >= deadline {
                    log.error("outcomes_abandoned", ["count": backlog, "error": error, "why": Self.abandonedBecause(error)])
                    return
                }
                repeated.warning("outcome_write_failed", ["count": batch.count, "retry_in": backoff, "error": error])
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    /// Writes `batch`. A statement PostgreSQL refuses for the values it carries is not sent
    /// again as it was: the part is halved until the refused row is alone, every other row's
    /// outcome goes in, and that row gets `Outcome.refusedByDatabase` instead (one bad value
    /// in an answer must not stop every outcome after it). Any other failure (the database
    /// away, a timeout, a lock) throws, with what was not written back at the head of
    /// `pending`, in order.
    private func write(_ batch: [Outcome]) async throws {
        var parts = [batch[...]]
        while let part = parts.popLast() {
            do {
                try await write(part, splittingInto: &parts)
            } catch {
                parts.append(part)
                let unwrittenOutcomes = Array(parts.reversed().joined())
                pending.withLock { $0.insert(contentsOf: unwrittenOutcomes, at: 0) }
                throw error
            }
        }
    }

    private func write(_ part: ArraySlice<Outcome>, splittingInto parts: inout [ArraySlice<Outcome>]) async throws {
        let outcomes = Array(part)
        do {
            settle(outcomes, applied: try await database.run { queue in try queue.complete(outcomes) })
        } catch let error as PostgresError where error.refusesTheValues {
            guard outcomes.count == 1, let refused = outcomes.first else {
                let middle = part.startIndex + part.count / 2
                parts.append(part[middle...])
                parts.append(part[..<middle])
                return
            }
            log.error("outcome_refused", ["notification_id": refused.id, "error": error,
                                          "written_instead": refused.refusedByDatabase.reason ?? "delivered"])
            do {
                let instead = [refused.refusedByDatabase]
                settle(outcomes, applied: try await database.run { queue in try queue.complete(instead) })
            } catch let error as PostgresError where error.refusesTheValues {
                // Not even the bare outcome went in: leave the row to lease rescue rather than
                // block every outcome behind it.
                log.error("outcome_dropped", ["notification_id": refused.id, "error": error,
                                              "why": "refused even without the answer's values; its lease will return the row"])
                settle(outcomes, applied: [])
            }
        }
    }

    /// `outcomes` are in the database (those of `applied`) or will never be.
    private func settle(_ outcomes: [Outcome], applied: Set<Int64>) {
        unwritten.withLock { unwritten in
            for outcome in outcomes {
                let left = unwritten[outcome.id, default: 1] - 1
                unwritten[outcome.id] = left > 0 ? left : nil
            }
        }
        if applied.count < outcomes.count {
            onStale(outcomes.count - applied.count)
            log.warning("outcomes_not_applied", ["count": outcomes.count - applied.count,
                                                 "why": "lease taken over or row cancelled"])
        }
    }

    /// What the shutdown line says kept the outcomes out.
    static func abandonedBecause(_ error: any Error) -> String {
        guard let error = error as? PostgresError, !error.isConnectionProblem else {
            return "database unreachable at shutdown; leases will return the rows"
        }
        return "the database refused the outcome statement until shutdown (SQLSTATE \(error.sqlState ?? "none")); "
            + "leases will return the rows"
    }

    func wake() { doorbell.ring() }
}
