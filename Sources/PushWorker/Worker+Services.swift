import Foundation
import Locking
import PGPushCore
import PushQueue
import Synchronization

/// The duties beside the claim loops: registration, heartbeat, lease renewal, rescue of
/// expired leases, history partitions and pruning.
extension Worker {
    var record: WorkerRecord {
        WorkerRecord(
            id: configuration.workerID, host: ProcessInfo.processInfo.hostName, pid: getpid(), version: PGPushVersion.current,
            apps: configuration.apps.map(\.name), services: senders.keys.map(\.description).sorted(),
            connections: senders.values.reduce(0) { $0 + $1.connections })
    }

    func register() async throws {
        let record = self.record
        var backoff = Duration.milliseconds(200)
        while true {
            do {
                try await maintenance.run { queue in try queue.register(record) }
                repeated.recovered("database_unreachable")
                return
            } catch {
                if isStopping { throw error }
                repeated.warning("database_unreachable", ["retry_in": backoff, "error": error])
                await stopRequested.wait(timeout: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    /// The worker's background duties: heartbeat (with the queue depth for
    /// /metrics) every 5 s, lease renewal every third of a lease, rescue of
    /// dead workers' rows every half lease, history partitions created ahead every 10
    /// minutes, pruning every 10 minutes when configured. Lease renewal and heartbeat go on while draining.
    func maintain() async {
        var duties = PeriodicDuties()
        duties.add("heartbeat", every: .seconds(5), whileDraining: true) { await self.heartbeat() }
        duties.add("lease renewal", every: configuration.lease / 3, whileDraining: true, firstRunNow: false) {
            await self.renewLeases()
        }
        duties.add("rescue", every: configuration.lease / 2) { await self.rescueExpiredLeases() }
        duties.add("history partitions", every: Self.pruneEvery) { await self.createHistoryPartitions() }
        if let retention = configuration.pruneAfter {
            duties.add("prune", every: Self.pruneEvery) { await self.prune(olderThan: retention) }
        }
        while !isStopping || !inFlight.isEmpty {
            let wait = await duties.runDue(draining: isStopping)
            if isStopping {
                try? await Task.sleep(for: min(wait, .milliseconds(200)))
            } else {
                await stopRequested.wait(timeout: wait)
            }
        }
    }

    func heartbeat() async {
        let totals = statistics
        let record = self.record
        let apps = configuration.apps.map(\.name)
        let since = finishedRowsSince.withLock { $0 }
        do {
            let (depth, unserved, finished, registeredAgain) = try await maintenance.run { queue in
                // A deleted row would leave the worker invisible to status and to the rescue of
                // dead workers' rows, for as long as it runs.
                let registeredAgain = try !queue.heartbeat(totals)
                if registeredAgain {
                    try queue.register(record)
                    _ = try queue.heartbeat(totals)
                }
                return (try queue.queueDepth(), try queue.unservedDue(), try queue.finishedRows(apps: apps, since: since),
                        registeredAgain)
            }
            if registeredAgain { log.warning("worker_registered_again", ["why": "its row in pgpush.workers was gone"]) }
            metrics.recordQueueDepth(depth, unserved: unserved)
            metrics.recordFinishedInDatabase(finished.counts)
            finishedRowsSince.withLock { $0 = finished.upTo }
            repeated.recovered("heartbeat_failed")
        } catch {
            repeated.warning("heartbeat_failed", ["error": error])
        }
    }

    func renewLeases() async {
        let ids = inFlight.ids
        guard !ids.isEmpty else { return }
        let lease = configuration.lease
        do {
            _ = try await maintenance.run { queue in try queue.renewLeases(ids: ids, lease: lease) }
            repeated.recovered("lease_renewal_failed")
        } catch {
            repeated.warning("lease_renewal_failed", ["rows": ids.count, "error": error])
        }
    }

    func rescueExpiredLeases() async {
        let maxAttempts = configuration.rescueMaxAttempts
        // The rows this worker holds: in flight, then in the writer. A row enters the writer
        // before it leaves the registry, so read in this order it is in one reading or both.
        let holding = inFlight.ids + writer.unwrittenIDs
        do {
            let rescued = try await maintenance.run { queue in
                try queue.rescueExpiredLeases(maxAttempts: maxAttempts, holding: holding)
            }
            repeated.recovered("rescue_failed")
            if rescued > 0 {
                log.info("leases_rescued", ["rows": rescued])
                claimLoops.values.forEach { $0.rowsMayBeWaitingAnywhere() }
            }
        } catch {
            repeated.warning("rescue_failed", ["error": error])
        }
    }

    /// Partitions ready ahead of the newest id, whether or not this worker prunes: without
    /// them new rows go to the default partition, the one retired row by row.
    func createHistoryPartitions() async {
        do {
            if let created = try await maintenance.run({ queue in try queue.createHistoryPartitions(onlyIfLeader: true) }),
               created > 0 {
                log.info("history_partitions_created", ["partitions": created])
            }
        } catch {
            log.warning("history_partitions_failed", ["error": error])
        }
    }

    func prune(olderThan retention: Duration) async {
        do {
            if let deleted = try await maintenance.run({ queue in try queue.prune(olderThan: retention, onlyIfLeader: true) }),
               deleted > 0 {
                log.info("pruned", ["rows": deleted])
            }
        } catch {
            log.warning("prune_failed", ["error": error])
        }
    }
}
