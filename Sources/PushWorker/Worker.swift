import Foundation
import Locking
import PGPushCore
import PushQueue
import Synchronization

/// `pgpush run`: claims rows, sends them, writes outcomes.
///
/// Per app, one claim loop keeps about one second of sending capacity in
/// flight; each row is validated, sent and decided in a child task; outcomes
/// go to the batch writer. Small services beside it renew leases, rescue rows
/// of dead workers and publish the heartbeat. `stop()` drains: no new claims,
/// rows not yet sent go back to `queued`, outcomes are written, the worker
/// deregisters.
public final class Worker: Sendable {
    public let configuration: WorkerConfiguration
    private let senders: [String: any NotificationSender]
    private let log: Log
    private let claims: DatabaseExecutor
    private let maintenance: DatabaseExecutor
    private let writer: OutcomeWriter
    private let listener: QueueListener
    private let inFlight = InFlightRegistry()
    private let claimLoops: [String: ClaimLoopSignals]
    private let health: [String: AppHealth]
    private let stopping = Atomic<Bool>(false)
    private let stopRequested = Latch()
    private let drainDeadline = Locked<ContinuousClock.Instant?>(nil)
    private let counters = Locked(WorkerCounters())
    // Jitter for retry delays. Seeded rather than SystemRandomNumberGenerator: a zero-sized
    // generator under a lock looks to ThreadSanitizer like a race on a neighbouring object.
    private let random = Locked(SeededRandomNumberGenerator(seed: UInt64.random(in: 1...UInt64.max)))
    private let metrics: WorkerMetrics
    private let repeated: RepeatedWarnings
    private let metricsServer: MetricsServer?
    /// Where the next heartbeat's count of rows finished in the database starts.
    private let finishedRowsSince = Locked<String?>(nil)
    /// How often the worker holding the prune lock prunes (when PGPUSH_PRUNE_AFTER_DAYS is set).
    static let pruneEvery: Duration = .seconds(600)
    /// Claims never ask for more than this many rows at once.
    static let largestClaim = 1000
    /// Rows in flight one connection carries at most, whatever the rate: enough to keep
    /// it busy uncapped (four connections, 1,000 rows); each row in flight costs about
    /// 13 KB (BENCHMARKS.md), and a row held here is a row other workers cannot take.
    static let inFlightPerConnection = 250

    public init(configuration: WorkerConfiguration, senders: [String: any NotificationSender], log: Log = Log()) throws {
        self.configuration = configuration
        self.senders = senders
        self.log = log
        repeated = RepeatedWarnings(log: log)
        claims = DatabaseExecutor(name: "claims", conninfo: configuration.databaseURL, workerID: configuration.workerID)
        maintenance = DatabaseExecutor(name: "maintenance", conninfo: configuration.databaseURL, workerID: configuration.workerID)
        let outcomes = DatabaseExecutor(name: "outcomes", conninfo: configuration.databaseURL, workerID: configuration.workerID)
        writer = OutcomeWriter(database: outcomes, interval: configuration.flushInterval, log: log, repeated: repeated)
        listener = try QueueListener()
        claimLoops = Dictionary(uniqueKeysWithValues: configuration.apps.map {
            ($0.name, ClaimLoopSignals(pollInterval: configuration.pollInterval))
        })
        health = Dictionary(uniqueKeysWithValues: configuration.apps.map { ($0.name, AppHealth()) })
        let metrics = WorkerMetrics(apps: configuration.apps.map(\.name))
        self.metrics = metrics
        metricsServer = try configuration.metricsAddress.map { address throws(ConfigurationError) in
            try MetricsServer(address: address) { path in Self.route(path, metrics: metrics, senders: senders) }
        }
    }

    /// The port the metrics endpoint listens on (useful with port 0).
    public var metricsPort: Int? { metricsServer?.port }

    private static func route(_ path: String, metrics: WorkerMetrics, senders: [String: any NotificationSender]) -> MetricsServer.Response {
        switch path {
        case "/metrics":
            var connections: [String: (live: Int, rateLimiterWaits: Int, requests: Int)] = [:]
            for (app, sender) in senders {
                let statistics = sender.statistics
                connections[app] = (statistics.liveConnections, statistics.rateLimiterWaits, statistics.requestsSent)
            }
            return MetricsServer.Response(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                                          body: metrics.render(connections: connections))
        case "/healthz":
            return MetricsServer.Response(status: 200, body: "ok\n")
        case "/readyz":
            return metrics.isReady(window: .seconds(30))
                ? MetricsServer.Response(status: 200, body: "ready\n")
                : MetricsServer.Response(status: 503, body: "database not reached in the last 30 s\n")
        default:
            return MetricsServer.Response(status: 404, body: "try /metrics, /healthz or /readyz\n")
        }
    }

    public var statistics: WorkerCounters { counters.withLock { $0 } }

    /// Asks the worker to drain and return from `run()`. Safe from any thread.
    public func stop() {
        guard !stopping.exchange(true, ordering: .sequentiallyConsistent) else { return }
        drainDeadline.withLock { $0 = .now + configuration.drainTimeout }
        stopRequested.open()
        claimLoops.values.forEach { $0.doorbell.ring() }
    }

    private var isStopping: Bool { stopping.load(ordering: .sequentiallyConsistent) }

    public func run() async throws {
        try await register()
        let wakeUps = QueueListener.Source(
            listenConninfo: configuration.listenDatabaseURL ?? configuration.databaseURL,
            setting: configuration.listenDatabaseURL == nil ? "DATABASE_URL" : "PGPUSH_LISTEN_DATABASE_URL",
            notifyConninfo: configuration.databaseURL, pollInterval: configuration.pollInterval)
        listener.start(wakeUps, log: log,
                       onQueued: { [claimLoops] app in claimLoops[app]?.rowsMayBeWaiting() },
                       onReconnect: { [claimLoops] in claimLoops.values.forEach { $0.rowsMayBeWaiting() } })
        log.info("worker_started", ["worker": configuration.workerID, "apps": configuration.apps.map(\.name).joined(separator: ",")])

        await withTaskGroup(of: Void.self) { group in
            let writerDone = Doorbell()
            group.addTask { [self] in
                await writer.run(shouldStop: { [self] in isStopping && inFlight.isEmpty },
                                 giveUpAt: { [self] in drainDeadline.withLock { $0 }.map { $0 + .seconds(10) } })
                writerDone.ring()
            }
            group.addTask { [self] in await maintain() }
            // Claim loops end when stopping; their sends are awaited here. The
            // drain task returns when they are done or the drain timeout passed,
            // whichever comes first (sends themselves end by their deadline).
            await withTaskGroup(of: Bool.self) { apps in
                let drained = Doorbell()
                for app in configuration.apps {
                    apps.addTask { [self] in
                        await dispatch(app)
                        return false
                    }
                }
                apps.addTask { [self] in
                    await stopRequested.wait()
                    await drained.wait(timeout: configuration.drainTimeout)
                    return true
                }
                var finishedApps = 0
                while let isDrainTask = await apps.next() {
                    if isDrainTask { break }
                    finishedApps += 1
                    if finishedApps == configuration.apps.count { drained.ring() }
                }
                if !inFlight.isEmpty {
                    log.warning("drain_timeout", ["in_flight": inFlight.ids.count, "why": "their leases will return them"])
                }
                apps.cancelAll()
            }
            writer.wake()
            await writerDone.wait(timeout: configuration.drainTimeout + .seconds(15))
            group.cancelAll()
        }

        metricsServer?.stop()
        try? await maintenance.run { queue in try queue.deregister() }
        for sender in senders.values { await sender.shutdown() }
        await listener.stop()
        let totals = statistics
        log.info("worker_stopped", ["sent": totals.sent, "delivered": totals.delivered, "failed": totals.failed,
                                    "retried": totals.retried])
    }

    // MARK: Claiming

    private func dispatch(_ app: AppConfiguration) async {
        guard let sender = senders[app.name], let loop = claimLoops[app.name], let health = health[app.name] else { return }
        let target = Self.inFlightTarget(of: sender)
        var backoff = Duration.milliseconds(100)
        await withDiscardingTaskGroup { group in
            while !isStopping {
                if case .paused(let until) = health.phase {
                    await loop.doorbell.wait(timeout: ContinuousClock.now.duration(to: until))
                    // The rows the pause held back are due when it ends.
                    loop.schedule.withLock { $0.rowsMayBeWaiting() }
                    continue
                }
                let room = { [inFlight] in
                    Self.claimLimit(health.phase, target: target, inFlight: inFlight.count(app: app.name))
                }
                guard let limit = room() else {
                    await loop.waitForRoom(timeout: configuration.pollInterval) { room() != nil }
                    continue
                }
                switch loop.schedule.withLock({ $0.next(at: .now) }) {
                case .claim:
                    break
                case .wait(let until, let wakeEarly):
                    let wait = ContinuousClock.now.duration(to: until)
                    // Sleeping through rings (the stop latch, not the doorbell) is what lets a
                    // burst of NOTIFYs share one claim.
                    if wakeEarly { await loop.doorbell.wait(timeout: wait) } else { await stopRequested.wait(timeout: wait) }
                    continue
                }
                let batch = min(limit, Self.largestClaim)
                let result: ClaimResult
                loop.schedule.withLock { $0.claimStarted(at: .now) }
                do {
                    result = try await claims.run { [configuration] queue in
                        try queue.claim(app: app.name, limit: batch, lease: configuration.lease,
                                        skipKnownInvalidTokens: app.skipKnownInvalidTokens)
                    }
                    backoff = .milliseconds(100)
                    repeated.recovered("claim_failed", key: app.name)
                } catch {
                    loop.schedule.withLock { $0.claimFailed() }
                    repeated.warning("claim_failed", key: app.name, ["app": app.name, "retry_in": backoff, "error": error])
                    // The stop latch, not the doorbell: every NOTIFY rings the doorbell, and a
                    // backoff that ends at each ring is no backoff in an outage.
                    await stopRequested.wait(timeout: backoff)
                    backoff = min(backoff * 2, .seconds(5))
                    continue
                }
                let taken = result.claimed.count + result.expiredIDs.count + result.knownInvalidIDs.count
                loop.schedule.withLock { $0.claimEnded(taken: taken, asked: batch) }
                if !result.expiredIDs.isEmpty {
                    log.info("expired_before_send", ["app": app.name, "count": result.expiredIDs.count])
                    metrics.recordExpiredAtClaim(app: app.name, count: result.expiredIDs.count)
                }
                if !result.knownInvalidIDs.isEmpty {
                    log.info("known_invalid_tokens_skipped", ["app": app.name, "count": result.knownInvalidIDs.count,
                                                               "why": "APNs answered Unregistered or ExpiredToken for them before"])
                    metrics.recordKnownInvalid(app: app.name, count: result.knownInvalidIDs.count)
                }
                inFlight.add(result.claimed, app: app.name)
                for row in result.claimed {
                    group.addTask { [self] in await deliver(row, app: app, sender: sender) }
                }
            }
        }
    }

    // MARK: Sending

    /// Rows in flight per app: a second's worth at the cap, never more than the
    /// connections carry (a high or no cap must not claim a whole backlog).
    static func inFlightTarget(of sender: any NotificationSender) -> Int {
        let carried = max(sender.connections, 1) * inFlightPerConnection
        return min(sender.requestsPerSecond.map { max($0, 1) } ?? carried, carried)
    }

    /// Small top-ups cost a database round trip each: a claim waits until a quarter of the
    /// window (at most 100 rows) is free, or nothing is in flight.
    static func smallestClaim(target: Int) -> Int { max(1, min(target / 4, 100)) }

    /// How many rows the claim loop may claim now, or nil to wait for room: a probing app
    /// sends one row alone, a paused one none.
    static func claimLimit(_ phase: AppHealth.Phase, target: Int, inFlight: Int) -> Int? {
        let limit: Int
        switch phase {
        case .healthy: limit = target - inFlight
        case .probing: limit = inFlight == 0 ? 1 : 0
        case .paused: return nil
        }
        return limit >= smallestClaim(target: target) || (limit > 0 && inFlight == 0) ? limit : nil
    }

    private func deliver(_ row: ClaimedNotification, app: AppConfiguration, sender: any NotificationSender) async {
        defer {
            let remaining = inFlight.remove(row.id)
            let target = Self.inFlightTarget(of: sender)
            // Wakes the claim loop only if it waits for room and now has it, or nothing is left
            // in flight (a probing app, a drain): a wake-up per row cost a timer and a claim per row.
            claimLoops[app.name]?.sendFinished(roomNow: remaining == 0 || target - remaining >= Self.smallestClaim(target: target))
        }
        if isStopping {
            writer.add(.released(row))
            return
        }
        let request: APNsRequest
        do {
            request = try row.notification.validated(bundleID: app.bundleID, authentication: sender.authenticationMethod)
        } catch {
            let outcome = OutcomeDecider(retry: app.retry).rejected(row, error)
            writer.add(outcome)
            metrics.recordOutcome(app: app.name, outcome)
            counters.withLock { $0.failed += 1 }
            log.info("notification_rejected", ["id": row.id, "app": app.name, "reason": error.reason.rawValue,
                                               "detail": error.message])
            return
        }
        if let wait = await health[app.name]?.admit(topic: request.topic) {
            // Its topic is paused: back to the queue unsent and uncounted, last answer kept.
            put(Outcome(id: row.id, claimCount: row.claimCount, disposition: .retry(after: wait, countsAsAttempt: false)), app: app)
            return
        }
        let result = await sender.send(request)
        metrics.recordLatency(result.latency)
        let decision = random.withLock { OutcomeDecider(retry: app.retry).decide(row, result, using: &$0) }
        put(decision.outcome, app: app)
        metrics.recordOutcome(app: app.name, decision.outcome)
        record(decision, row: row, topic: request.topic, app: app)
    }

    /// Hands an outcome to the writer; a row put back is claimed again when it comes due
    /// (its `send_after` is written within one flush interval).
    private func put(_ outcome: Outcome, app: AppConfiguration) {
        writer.add(outcome)
        if case .retry(let delay, _) = outcome.disposition {
            claimLoops[app.name]?.retryComesDue(at: .now + delay + configuration.flushInterval)
        }
    }

    private func record(_ decision: OutcomeDecider.Decision, row: ClaimedNotification, topic: String, app: AppConfiguration) {
        let outcome = decision.outcome
        counters.withLock { counters in
            counters.sent += 1
            switch outcome.disposition {
            case .delivered: counters.delivered += 1
            case .failed, .expired: counters.failed += 1
            case .retry: counters.retried += 1
            }
        }
        if outcome.recordsError {
            let recipient = row.notification.channelID.map { ("channel", $0) } ?? ("token", row.notification.deviceToken)
            log.info("apns_error", ["id": row.id, "app": app.name, recipient.0: recipient.1,
                                    "status": outcome.httpStatus.map(String.init) ?? "none",
                                    "reason": outcome.reason ?? "none", "outcome": Self.describe(outcome.disposition)])
        }
        guard let appHealth = health[app.name] else { return }
        if outcome.httpStatus != nil {
            switch appHealth.recordAnswer(reason: outcome.disposition == .delivered ? nil : outcome.reason) {
            case .suspected:
                log.error("environment_mismatch_suspected", [
                    "app": app.name, "environment": app.environment.rawValue,
                    "why": "most recent answers are BadDeviceToken: tokens may belong to the other APNs environment"])
                reportHealth(app: app.name, healthy: false, reason: Self.environmentMismatch)
            case .cleared:
                reportHealth(app: app.name, healthy: true, reason: nil)
            case .unchanged:
                break
            }
        }
        // An answer APNs gave past its credential checks proves the app's credentials and,
        // unless it refused the topic, the topic.
        let passedChecks = outcome.httpStatus.map { (200..<500).contains($0) } ?? false
        switch decision.action {
        case .pause(.topic):
            if let pause = appHealth.reportProblem(topic: topic) {
                log.error("topic_paused", ["app": app.name, "topic": topic, "reason": decision.pauseReason ?? "", "retry_in": pause])
                reportHealth(app: app.name, topic: topic, healthy: false, reason: decision.pauseReason)
            }
        case .pause(.app):
            _ = appHealth.topicAnswered(topic, accepted: false)
            if let pause = appHealth.reportProblem() {
                log.error("app_paused", ["app": app.name, "reason": decision.pauseReason ?? "", "retry_in": pause])
                reportHealth(app: app.name, healthy: false, reason: decision.pauseReason)
            }
        default:
            if appHealth.topicAnswered(topic, accepted: passedChecks) {
                log.info("topic_resumed", ["app": app.name, "topic": topic])
                reportHealth(app: app.name, topic: topic, healthy: true, reason: nil)
            }
            if passedChecks, appHealth.reportSuccess() {
                reportHealth(app: app.name, healthy: true, reason: nil)
            }
        }
    }

    /// The `app_health` reason when most answers are BadDeviceToken.
    static let environmentMismatch = "LikelyEnvironmentMismatch"

    private func reportHealth(app: String, topic: String? = nil, healthy: Bool, reason: String?) {
        metrics.recordHealth(app: app, topic: topic, healthy: healthy)
        Task { [self] in
            do {
                try await maintenance.run { queue in
                    try queue.reportAppHealth(app: app, topic: topic, healthy: healthy, reason: reason)
                }
            } catch {
                log.warning("app_health_not_written", ["app": app, "error": error])
            }
        }
    }

    private static func describe(_ disposition: Outcome.Disposition) -> String {
        switch disposition {
        case .delivered: "delivered"
        case .failed: "failed"
        case .expired: "expired"
        case .retry(let delay, let counts): "retry_in_\(delay)" + (counts ? "" : "_uncounted")
        }
    }

    // MARK: Services

    private var record: WorkerRecord {
        WorkerRecord(
            id: configuration.workerID, host: ProcessInfo.processInfo.hostName, pid: getpid(), version: PGPushVersion.current,
            apps: configuration.apps.map(\.name), connections: configuration.apps.reduce(0) { $0 + $1.connections })
    }

    private func register() async throws {
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
    private func maintain() async {
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

    private func heartbeat() async {
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

    private func renewLeases() async {
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

    private func rescueExpiredLeases() async {
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
                claimLoops.values.forEach { $0.rowsMayBeWaiting() }
            }
        } catch {
            repeated.warning("rescue_failed", ["error": error])
        }
    }

    /// Partitions ready ahead of the newest id, whether or not this worker prunes: without
    /// them new rows go to the default partition, the one retired row by row.
    private func createHistoryPartitions() async {
        do {
            if let created = try await maintenance.run({ queue in try queue.createHistoryPartitions(onlyIfLeader: true) }),
               created > 0 {
                log.info("history_partitions_created", ["partitions": created])
            }
        } catch {
            log.warning("history_partitions_failed", ["error": error])
        }
    }

    private func prune(olderThan retention: Duration) async {
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

/// The version written to `pgpush.workers` and printed by `pgpush --version`.
public enum PGPushVersion {
    public static let current = "0.1.0"
}
