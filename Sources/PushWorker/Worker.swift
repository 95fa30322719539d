import APNsClient
import Foundation
import LocalHTTP
import Locking
import PGPushCore
import PushQueue
import PushTransport
import Synchronization

/// `pgpush run`: claims rows, sends them, writes outcomes.
///
/// Per app, one claim loop keeps about one second of sending capacity in
/// flight; each row is validated, sent and decided in a child task; outcomes
/// go to the batch writer. Small services beside it renew leases, rescue rows
/// of dead workers and publish the heartbeat. `stop()` drains: no new claims,
/// rows not yet sent go back to `queued`, outcomes are written, the worker
/// deregisters.
package final class Worker: Sendable {
    package let configuration: WorkerConfiguration
    let senders: [Route: any NotificationSender]
    let log: Log
    let claims: DatabaseExecutor
    let maintenance: DatabaseExecutor
    let writer: OutcomeWriter
    let listener: QueueListener
    let inFlight = InFlightRegistry()
    let claimLoops: [Route: ClaimLoopSignals]
    let health: [Route: AppHealth]
    /// Routes whose app sets rate_per_app: this worker's share of it.
    let sharedRates: [Route: SharedRateGate]
    let rateShares: DatabaseExecutor?
    let stopping = Atomic<Bool>(false)
    let stopRequested = Latch()
    let drainDeadline = Locked<ContinuousClock.Instant?>(nil)
    let counters = Locked(WorkerCounters())
    // Jitter for retry delays. Seeded rather than SystemRandomNumberGenerator: a zero-sized
    // generator under a lock looks to ThreadSanitizer like a race on a neighbouring object.
    let random = Locked(SeededRandomNumberGenerator(seed: UInt64.random(in: 1...UInt64.max)))
    let metrics: WorkerMetrics
    let repeated: RepeatedWarnings
    let metricsServer: HTTPServer?
    /// Where the next heartbeat's count of rows finished in the database starts.
    let finishedRowsSince = Locked<String?>(nil)
    /// How often the worker holding the prune lock prunes (when PGPUSH_PRUNE_AFTER_DAYS is set).
    static let pruneEvery: Duration = .seconds(600)
    /// Claims never ask for more than this many rows at once.
    static let largestClaim = 1000
    /// Rows in flight one connection carries at most, whatever the rate: enough to keep
    /// it busy uncapped (four connections, 1,000 rows); each row in flight costs about
    /// 13 KB (BENCHMARKS.md), and a row held here is a row other workers cannot take.
    static let inFlightPerConnection = 250

    /// `senders`: one per app and service the worker sends for; an app's rows of a service
    /// it has no sender for are not claimed.
    package init(configuration: WorkerConfiguration, senders: [any NotificationSender], log: Log = Log()) throws {
        // `load` checks these; a configuration built in code meets them here, not as a trap in
        // the dictionaries below or as an app count no worker carries.
        try WorkerConfiguration.checkAppCount(configuration.apps.count)
        var names: Set<String> = []
        for app in configuration.apps where !names.insert(app.name).inserted {
            throw ConfigurationError("app \"\(app.name)\" is configured more than once")
        }
        var routes: [Route: any NotificationSender] = [:]
        for sender in senders {
            let route = Route(app: sender.app, service: sender.service)
            guard names.contains(route.app), routes.updateValue(sender, forKey: route) == nil else {
                throw ConfigurationError("app \"\(route.app)\": \(route.service.rawValue) sender given twice, or for no configured app")
            }
        }
        self.configuration = configuration
        self.senders = routes
        self.log = log
        repeated = RepeatedWarnings(log: log)
        claims = DatabaseExecutor(name: "claims", conninfo: configuration.databaseURL, workerID: configuration.workerID)
        maintenance = DatabaseExecutor(name: "maintenance", conninfo: configuration.databaseURL, workerID: configuration.workerID)
        let outcomes = DatabaseExecutor(name: "outcomes", conninfo: configuration.databaseURL, workerID: configuration.workerID)
        writer = OutcomeWriter(database: outcomes, interval: configuration.flushInterval, log: log, repeated: repeated)
        listener = try QueueListener()
        claimLoops = routes.mapValues { _ in
            ClaimLoopSignals(pollInterval: configuration.pollInterval, largestClaim: Self.largestClaim)
        }
        health = routes.mapValues { _ in AppHealth() }
        let ratePerApp = Dictionary(uniqueKeysWithValues: configuration.apps.map { ($0.name, $0.ratePerApp) })
        sharedRates = routes.keys.reduce(into: [:]) { gates, route in
            if let rate = ratePerApp[route.app], rate > 0 { gates[route] = SharedRateGate(rate: rate) }
        }
        // Its own connection: a renewal must not wait behind a claim, or the share lapses.
        rateShares = sharedRates.isEmpty ? nil
            : DatabaseExecutor(name: "rate-shares", conninfo: configuration.databaseURL, workerID: configuration.workerID)
        let metrics = WorkerMetrics(apps: configuration.apps.map(\.name),
                                    services: Dictionary(grouping: routes.keys, by: \.app).mapValues { $0.map(\.service) },
                                    reasons: senders.reduce(into: Set<String>()) { $0.formUnion($1.reasons) })
        self.metrics = metrics
        metricsServer = try configuration.metricsAddress.map { address throws(ConfigurationError) in
            do {
                return try HTTPServer(address: address) { [routes] request in Self.route(request, metrics: metrics, senders: routes) }
            } catch {
                throw ConfigurationError(String(describing: error))
            }
        }
        Self.logConnectionFailures(of: routes, to: RepeatedWarnings(log: log, interval: Self.connectionFailureLogInterval))
    }

    /// The port the metrics endpoint listens on (useful with port 0).
    package var metricsPort: Int? { metricsServer?.port }

    private static func route(_ request: HTTPRequest, metrics: WorkerMetrics, senders: [Route: any NotificationSender]) -> HTTPResponse {
        guard request.method == "GET" else { return HTTPResponse(status: 405, body: "only GET\n") }
        switch request.path {
        case "/metrics":
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                                          body: metrics.render(senders: senders.mapValues(\.statistics)))
        case "/healthz":
            return HTTPResponse(status: 200, body: "ok\n")
        case "/readyz":
            return metrics.isReady(window: .seconds(30))
                ? HTTPResponse(status: 200, body: "ready\n")
                : HTTPResponse(status: 503, body: "database not reached in the last 30 s\n")
        default:
            return HTTPResponse(status: 404, body: "try /metrics, /healthz or /readyz\n")
        }
    }

    package var statistics: WorkerCounters { counters.withLock { $0 } }

    /// Asks the worker to drain and return from `run()`. Safe from any thread.
    package func stop() {
        guard !stopping.exchange(true, ordering: .sequentiallyConsistent) else { return }
        drainDeadline.withLock { $0 = .now + configuration.drainTimeout }
        stopRequested.open()
        claimLoops.values.forEach { $0.doorbell.ring() }
        sharedRates.values.forEach { $0.stop() }
    }

    var isStopping: Bool { stopping.load(ordering: .sequentiallyConsistent) }

    package func run() async throws {
        try await register()
        let wakeUps = QueueListener.Source(
            listenConninfo: configuration.listenDatabaseURL ?? configuration.databaseURL,
            setting: configuration.listenDatabaseURL == nil ? "DATABASE_URL" : "PGPUSH_LISTEN_DATABASE_URL",
            notifyConninfo: configuration.databaseURL, pollInterval: configuration.pollInterval)
        listener.start(wakeUps, log: log,
                       onQueued: { [claimLoops] app in
                           for (route, loop) in claimLoops where route.app == app { loop.rowsMayBeWaiting() }
                       },
                       onReconnect: { [claimLoops] in claimLoops.values.forEach { $0.rowsMayBeWaitingAnywhere() } })
        log.info("worker_started", ["worker": configuration.workerID, "apps": configuration.apps.map(\.name).joined(separator: ",")])

        await withTaskGroup(of: Void.self) { group in
            let writerDone = Doorbell()
            // Every send has added its outcome once the claim loops and their sends have
            // ended. "Stopping and nothing in flight" came too early: a claim still on its
            // way returns rows after it, and their release would find no writer.
            let sendsEnded = Latch()
            group.addTask { [self] in
                await writer.run(shouldStop: { sendsEnded.isOpen },
                                 giveUpAt: { [self] in drainDeadline.withLock { $0 }.map { $0 + .seconds(10) } })
                writerDone.ring()
            }
            group.addTask { [self] in await maintain() }
            group.addTask { [self] in await keepRateShares(until: sendsEnded) }
            // Claim loops end when stopping; their sends are awaited here. The
            // drain task returns when they are done or the drain timeout passed,
            // whichever comes first (sends themselves end by their deadline).
            await withTaskGroup(of: Bool.self) { apps in
                let drained = Doorbell()
                for route in senders.keys {
                    apps.addTask { [self] in
                        await dispatch(route)
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
                    if finishedApps == senders.count { drained.ring() }
                }
                if !inFlight.isEmpty {
                    log.warning("drain_timeout", ["in_flight": inFlight.ids.count, "why": "their leases will return them"])
                }
                apps.cancelAll()
            }
            sendsEnded.open()
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
}

/// The version written to `pgpush.workers` and printed by `pgpush --version`.
package enum PGPushVersion {
    package static let current = "0.4.0"
}
