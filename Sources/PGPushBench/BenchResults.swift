import Foundation

/// p50/p90/p99/max of a set of durations, in milliseconds.
package struct LatencySummary: Sendable, Codable, Equatable {
    package var count: Int
    package var p50: Double
    package var p90: Double
    package var p99: Double
    package var max: Double

    /// Nearest-rank percentiles; nil for an empty set.
    package init?(milliseconds values: [Double]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        func rank(_ fraction: Double) -> Double {
            sorted[Swift.min(sorted.count - 1, Swift.max(0, Int((fraction * Double(sorted.count)).rounded(.up)) - 1))]
        }
        count = sorted.count
        p50 = rank(0.5)
        p90 = rank(0.9)
        p99 = rank(0.99)
        max = sorted[sorted.count - 1]
    }
}

package struct DatabaseCeilingResult: Sendable, Codable {
    package var rows: Int
    package var seconds: Double
    package var perSecond: Double
    package var claims: Int
    package var completes: Int
    /// The benchmark's own CPU (libpq, building and parsing the batches) during the run.
    package var clientCPUSeconds: Double
    /// Busy CPUs on the whole machine on average during the run; what is not the client's
    /// is PostgreSQL's (and other work's, on a shared machine).
    package var machineBusyCPUs: Double
}

package struct TransportCeilingResult: Sendable, Codable {
    package var requests: Int
    package var connections: Int
    package var inFlight: Int
    package var seconds: Double
    package var perSecond: Double
    package var delivered: Int
    package var simulatorCPUSeconds: Double
    /// The client's CPU (this process during the run).
    package var clientCPUSeconds: Double
    /// Busy CPUs on the whole machine on average during the run.
    package var machineBusyCPUs: Double
}

/// A worker process draining (or working on) a backlog.
package struct DrainResult: Sendable, Codable {
    package var rows: Int
    package var connections: Int
    package var ratePerConnection: Int
    /// From starting the worker to the last outcome written (or to the stop, for a time-boxed run).
    package var seconds: Double
    package var finished: Int
    package var perSecond: Double
    /// Between the 10th and 90th percentile of finished_at.
    package var steadyPerSecond: Double?
    package var statuses: [String: Int]
    /// last_reason of the rows that failed.
    package var failureReasons: [String: Int]
    package var deliveryErrors: Int
    package var worker: ProcessUsage
    package var workerCPUMicrosecondsPerNotification: Double
    package var simulatorRequests: Int
    package var simulatorStatuses: [String: Int]
    package var goAwaysSent: Int
    package var duplicateAcceptedAPNsIDs: Int
    package var simulatorCPUSeconds: Double
    /// Busy CPUs on the whole machine on average while the worker ran.
    package var machineBusyCPUs: Double
    /// Time-boxed runs: rows finished in the second half of the time box, per second (start-up
    /// and the first claims left out; `steadyPerSecond` is skewed by a short box's start).
    package var secondHalfPerSecond: Double?
    /// Worker processes side by side (`worker` is their sum, with the highest peak RSS) and each one's usage.
    package var workers: Int
    package var perWorker: [ProcessUsage]
    /// The backlog's insert (`INSERT ... SELECT generate_series`, 50,000 rows a statement), per row inserted.
    package var insertCost: DatabaseCost?
    /// From just before the worker started to its exit (claims, outcomes, heartbeats, autovacuum), per row finished.
    package var deliveryCost: DatabaseCost?
    /// Broadcast requests the simulator received (the broadcast mix only).
    package var simulatorBroadcasts: Int? = nil
}

extension DrainResult {
    /// CPU time the whole machine spent per notification while the worker ran: the worker's,
    /// the simulator's, and the rest's (PostgreSQL, the bench's polls, anything else).
    package var machineCPUMicrosecondsPerNotification: Double {
        machineBusyCPUs * seconds * 1e6 / Double(max(finished, 1))
    }

    package var simulatorCPUMicrosecondsPerNotification: Double {
        simulatorCPUSeconds * 1e6 / Double(max(finished, 1))
    }
}

package struct CappedConnectionResult: Sendable, Codable {
    package var connection: Int
    package var requests: Int
    /// Requests/second between one second after its first request and one second before its last.
    package var steadyPerSecond: Double
    /// The simulator's sliding one-second window.
    package var maxInOneSecond: Int
}

package struct CappedResult: Sendable, Codable {
    package var connections: Int
    package var cap: Int
    package var seconds: Int
    package var totalRequests: Int
    /// The sum of the connections' steady rates.
    package var aggregatePerSecond: Double
    package var lowestSteadyPerSecond: Double
    package var meanSteadyPerSecond: Double
    package var highestInOneSecond: Int
    package var perConnection: [CappedConnectionResult]
    package var worker: ProcessUsage
    /// Rows finished in the run (the backlog is larger than the run can send).
    package var finished: Int
    /// The worker's whole life (start-up and TLS handshakes included) over the requests it sent.
    package var workerCPUMicrosecondsPerNotification: Double
    package var machineBusyCPUs: Double
    package var insertCost: DatabaseCost?
    package var deliveryCost: DatabaseCost?
}

package struct LatencyResult: Sendable, Codable {
    package var offeredPerSecond: Int
    package var insertedPerSecond: Double
    package var rows: Int
    package var connections: Int
    package var ratePerConnection: Int
    /// created_at to the request's arrival at the simulator (its log has millisecond times).
    package var insertToRequest: LatencySummary?
    /// created_at to finished_at.
    package var insertToOutcome: LatencySummary?
    package var worker: ProcessUsage
    package var workerCPUMicrosecondsPerNotification: Double
    /// From just before the worker started to its exit: one insert per transaction, the
    /// claims and the outcomes, per row (the 50 warm-up rows included).
    package var cost: DatabaseCost?
    /// The inserting session's backend alone, per row: the application's share of the server's CPU.
    package var insertSessionCPUMicrosecondsPerNotification: Double?
}

/// The worker at one steady offered rate (`SteadyRun`).
package struct SteadyResult: Sendable, Codable {
    package var offeredPerSecond: Int
    /// Rows sent before the run and not vacuumed (`--steady-history`).
    package var historyRows: Int
    /// The worker went through PgBouncer (transaction pooling); `floor` never does,
    /// `pooledFloor` does.
    package var throughPgBouncer: Bool
    package var insertedPerSecond: Double
    package var connections: Int
    package var ratePerConnection: Int
    /// Rows inserted in the measured window (after 50 warm-up rows).
    package var rows: Int
    /// From the first measured insert until every row was finished.
    package var seconds: Double
    package var finished: Int
    /// Rows not finished yet when the last row was inserted, and how long the rest took.
    package var unfinishedAtLastInsert: Int
    package var drainSecondsAfterLastInsert: Double
    /// The worker's whole life, and its CPU from the first measured insert to its exit.
    package var worker: ProcessUsage
    package var workerCPUSeconds: Double
    package var workerCPUMicrosecondsPerNotification: Double
    package var workerBusyCPUs: Double
    /// PostgreSQL's CPU (every server process, the inserting session's backend included, the
    /// bench's observing one not) and WAL from the first measured insert until every row was finished.
    package var serverCPUMicrosecondsPerNotification: Double?
    package var serverBusyCPUs: Double?
    package var walBytesPerNotification: Double
    /// The inserting session's backend alone: the application's share.
    package var insertSessionCPUMicrosecondsPerNotification: Double?
    package var machineBusyCPUs: Double
    package var simulatorRequests: Int
    package var duplicateAcceptedAPNsIDs: Int
    /// created_at to the request's arrival at the simulator.
    package var insertToRequest: LatencySummary?
    /// The worker's commits per notification over the whole run (the inserts taken off).
    package var workerTransactionsPerNotification: Double
    /// Rows, commits, WAL and CPU from before the worker started to its exit (warm-up rows
    /// included), with every session's statistics flushed.
    package var cost: DatabaseCost?
    /// The least a worker could cost PostgreSQL at this rate, measured in the same run.
    package var floor: FloorResult?
    /// With `throughPgBouncer`: the same floor through the same PgBouncer (unprepared).
    package var pooledFloor: FloorResult?
    /// h2load at the same rate over as many connections: the transport alone (nil when
    /// h2load is not installed).
    package var transportPeer: TransportPeerResult?

    /// PostgreSQL's CPU the worker caused, per notification: every server process less the
    /// inserting session.
    package var causedByWorkerMicroseconds: Double? {
        guard let server = serverCPUMicrosecondsPerNotification else { return nil }
        return server - (insertSessionCPUMicrosecondsPerNotification ?? 0)
    }

    /// causedByWorkerMicroseconds / the floor's.
    package var ratioToFloor: Double? { ratio(to: floor) }

    /// causedByWorkerMicroseconds / the pooled floor's.
    package var ratioToPooledFloor: Double? { ratio(to: pooledFloor) }

    /// The worker's CPU per notification / h2load's per request.
    package var ratioToTransportPeer: Double? {
        guard let peer = transportPeer?.cpuMicrosecondsPerRequest, peer > 0 else { return nil }
        return workerCPUMicrosecondsPerNotification / peer
    }

    private func ratio(to floor: FloorResult?) -> Double? {
        guard let ours = causedByWorkerMicroseconds, let theirs = floor?.causedByWorkerMicroseconds, theirs > 0 else { return nil }
        return ours / theirs
    }
}

package struct MachineInfo: Sendable, Codable {
    package var processors: Int
    package var cpuModel: String
    package var memoryMB: Int
    package var kernel: String
    package var postgres: String
    package var database: String
    /// /proc/loadavg when the run started: other work on the machine skews every figure.
    package var loadAverage: String
    /// The simulator's nice value, when raised (see `SimulatorProcess.niceness`).
    package var simulatorNiceness: Int?

    package static func current(postgresVersion: String, database: String) -> MachineInfo {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown"
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return MachineInfo(processors: ProcessInfo.processInfo.activeProcessorCount, cpuModel: model,
                           memoryMB: Int(ProcessInfo.processInfo.physicalMemory / 1_048_576), kernel: release,
                           postgres: postgresVersion, database: database, loadAverage: loadAverageNow(),
                           simulatorNiceness: SimulatorProcess.niceness.map(Int.init))
    }

    package static func loadAverageNow() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }
}

/// One target from the issue, measured.
package struct TargetCheck: Sendable, Codable {
    package var target: String
    package var measured: String
    package var holds: Bool
}

/// Everything one `pgpush bench` run measured; the JSON of `--json`.
package struct BenchReport: Sendable, Codable {
    package var startedAt: Date
    package var machine: MachineInfo
    package var options: BenchOptions
    package var databaseCeiling: DatabaseCeilingResult?
    package var transportCeiling: TransportCeilingResult?
    package var uncapped: DrainResult?
    /// The same drain as `uncapped`, with FCM rows, to the FCM simulator (`pgpush mock-fcm`).
    package var fcm: DrainResult?
    package var uncappedRatioOfLowerCeiling: Double?
    /// 1 / (1/database + 1/transport): the rate if the two ceilings' CPU costs simply add up,
    /// which they do when the worker, the simulator and PostgreSQL share the same cores.
    package var combinedCeiling: Double?
    /// The uncapped rate if every core were busy at the CPU cost per notification the
    /// uncapped run measured: the most this machine allows end to end.
    package var allCoresBusyRate: Double?
    /// The embedded cluster's CPU with no session, over 3 s at the start: the fixed cost that
    /// low rates divide by few notifications.
    package var postgresIdleCPUMillisecondsPerSecond: Double?
    package var capped: [CappedResult] = []
    package var latency: LatencyResult?
    package var steady: [SteadyResult] = []
    /// Worker processes side by side under a backlog at the cap (`--scale-workers`).
    package var scale: [DrainResult] = []
    package var faults: DrainResult?
    /// Device pushes and broadcasts to channels in one backlog (`broadcast` scenario).
    package var broadcast: DrainResult?
    package var memory: DrainResult?
    package var history: ClaimAtScaleResult?
    /// The history scenario's finished rows retired by row deletes and by partition drops.
    package var retirement: HistoryRetirementResult?
    /// Web Push encryption per message, beside its floor (`webpush` scenario).
    package var webPush: WebPushSealResult?
    /// The same drain as `uncapped`, with Web Push rows to the Web Push simulator's browser
    /// subscriptions (`pgpush mock-webpush`): every message sealed, VAPID-signed and opened.
    package var webPushDrain: DrainResult?
    /// Urgent rows under a bulk backlog beside an empty queue, and the claim with lanes beside
    /// the claim before them (`lanes` scenario).
    package var lanes: LanesResult?
    /// The status page's answers on a big table, beside a round trip and a count of everything (`web`).
    package var web: StatusPageResult?
    package var targets: [TargetCheck] = []
    package var loadAverageAtEnd: String?

    /// The lower of the two ceilings measured, the yardstick of the uncapped ratio.
    package var lowerCeiling: Double? {
        [databaseCeiling?.perSecond, transportCeiling?.perSecond].compactMap { $0 }.min()
    }

    package func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }
}

/// The `lanes` scenario (`LaneRun`).
package struct LanesResult: Sendable, Codable, Equatable {
    package var backlog: Int
    package var cap: Int
    package var connections: Int
    package var urgentRows: Int
    /// Insert → request of urgent rows inserted while the worker drains the bulk backlog.
    package var urgentUnderBacklog: LatencySummary?
    /// The same with the queue empty: the floor.
    package var urgentEmptyQueue: LatencySummary?
    /// What the rows still queued would have made an urgent row wait without lanes, at the cap.
    package var withoutLanesWaitSeconds: Double
    /// Milliseconds per claim, by rows claimed: with lanes, and migration 017's claim.
    package var claims: [ClaimCost]

    package struct ClaimCost: Sendable, Codable, Equatable {
        package var rows: Int
        package var withLanes: LatencySummary?
        package var beforeLanes: LatencySummary?
    }
}
