import Dispatch
import Foundation
import Locking
import Postgres
import PushQueue

/// The queue alone: claim batches and write their outcomes, no HTTP. Like the
/// worker, claims and outcome writes run on two connections at once, with at
/// most about 2,000 rows claimed but not yet written.
package enum DatabaseCeiling {
    static let claimBatch = 1000
    static let writeBatch = 2000

    package static func run(conninfo: String, rows: Int, progress: @escaping @Sendable (Int) -> Void) throws -> DatabaseCeilingResult {
        let pending = Locked<[ClaimResult?]>([])
        let available = DispatchSemaphore(value: 0)
        let slots = DispatchSemaphore(value: writeBatch / claimBatch)
        let failure = Locked<String?>(nil)
        let counts = Locked((claims: 0, completes: 0, written: 0))
        let claimerDone = DispatchSemaphore(value: 0), writerDone = DispatchSemaphore(value: 0)
        let started = ContinuousClock.now
        let cpuAtStart = ownCPUSeconds(), machineAtStart = MachineCPU.now()

        Thread.detachNewThread {
            defer {
                pending.withLock { $0.append(nil) }
                available.signal()
                claimerDone.signal()
            }
            do {
                let queue = NotificationQueue(connection: try PostgresConnection(conninfo: conninfo), workerID: "bench-db")
                while failure.withLock({ $0 }) == nil {
                    slots.wait()
                    let result = try queue.claim(app: "default", limit: claimBatch, lease: .seconds(60))
                    counts.withLock { $0.claims += 1 }
                    if result.claimed.isEmpty { slots.signal(); return }
                    pending.withLock { $0.append(result) }
                    available.signal()
                }
            } catch {
                failure.withLock { $0 = "claim: \(error)" }
            }
        }
        Thread.detachNewThread {
            defer { writerDone.signal() }
            do {
                let queue = NotificationQueue(connection: try PostgresConnection(conninfo: conninfo), workerID: "bench-db")
                var finished = false
                while !finished {
                    available.wait()
                    var outcomes: [Outcome] = []
                    var batches = 0, taken = 0
                    pending.withLock { waiting in
                        while let first = waiting.first, outcomes.count < writeBatch {
                            waiting.removeFirst()
                            taken += 1
                            guard let result = first else { finished = true; break }
                            outcomes += result.claimed.map(Outcome.delivered)
                            batches += 1
                        }
                    }
                    // One signal per entry appended; this pass took `taken` of them.
                    for _ in 0..<max(0, taken - 1) { available.wait() }
                    if !outcomes.isEmpty {
                        let written = try queue.complete(outcomes).count
                        let total = counts.withLock { counts in
                            counts.completes += 1
                            counts.written += written
                            return counts.written
                        }
                        progress(total)
                    }
                    for _ in 0..<batches { slots.signal() }
                }
            } catch {
                failure.withLock { $0 = "complete: \(error)" }
                slots.signal()
                slots.signal()
            }
        }
        claimerDone.wait()
        writerDone.wait()
        let seconds = Double((ContinuousClock.now - started) / .milliseconds(1)) / 1000
        let cpu = ownCPUSeconds() - cpuAtStart, busy = MachineCPU.now().busyCPUs(since: machineAtStart)
        if let failure = failure.withLock({ $0 }) { throw BenchError("database ceiling: \(failure)") }
        let totals = counts.withLock { $0 }
        guard totals.written == rows else {
            throw BenchError("database ceiling: \(totals.written) outcomes written for \(rows) rows")
        }
        return DatabaseCeilingResult(rows: rows, seconds: seconds, perSecond: Double(rows) / seconds,
                                     claims: totals.claims, completes: totals.completes, clientCPUSeconds: cpu,
                                     machineBusyCPUs: busy)
    }
}
