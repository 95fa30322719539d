import Foundation

/// p50/p90/p99/max of a set of durations, in milliseconds.
public struct LatencySummary: Sendable, Codable, Equatable {
    public var count: Int
    public var p50: Double
    public var p90: Double
    public var p99: Double
    public var max: Double

    /// Nearest-rank percentiles; nil for an empty set.
    public init?(milliseconds values: [Double]) {
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

public struct DatabaseCeilingResult: Sendable, Codable {
    public var rows: Int
    public var seconds: Double
    public var perSecond: Double
    public var claims: Int
    public var completes: Int
    /// The benchmark's own CPU (libpq, building and parsing the batches) during the run.
    public var clientCPUSeconds: Double
    /// Busy CPUs on the whole machine on average during the run; what is not the client's
    /// is PostgreSQL's (and other work's, on a shared machine).
    public var machineBusyCPUs: Double
}

public struct TransportCeilingResult: Sendable, Codable {
    public var requests: Int
    public var connections: Int
    public var inFlight: Int
    public var seconds: Double
    public var perSecond: Double
    public var delivered: Int
    public var simulatorCPUSeconds: Double
    /// The client's CPU (this process during the run).
    public var clientCPUSeconds: Double
    /// Busy CPUs on the whole machine on average during the run.
    public var machineBusyCPUs: Double
}

/// A worker process draining (or working on) a backlog.
public struct DrainResult: Sendable, Codable {
    public var rows: Int
    public var connections: Int
    public var ratePerConnection: Int
    /// From starting the worker to the last outcome written (or to the stop, for a time-boxed run).
    public var seconds: Double
    public var finished: Int
    public var perSecond: Double
    /// Between the 10th and 90th percentile of finished_at.
    public var steadyPerSecond: Double?
    public var statuses: [String: Int]
    /// last_reason of the rows that failed.
    public var failureReasons: [String: Int]
    public var deliveryErrors: Int
    public var worker: ProcessUsage
    public var workerCPUMicrosecondsPerNotification: Double
    public var simulatorRequests: Int
    public var simulatorStatuses: [String: Int]
    public var goAwaysSent: Int
    public var duplicateAcceptedAPNsIDs: Int
    public var simulatorCPUSeconds: Double
    /// Busy CPUs on the whole machine on average while the worker ran.
    public var machineBusyCPUs: Double
    /// Time-boxed runs: rows finished in the second half of the time box, per second (start-up
    /// and the first claims left out; `steadyPerSecond` is skewed by a short box's start).
    public var secondHalfPerSecond: Double?
    /// Worker processes side by side (`worker` is their sum, with the highest peak RSS) and each one's usage.
    public var workers: Int
    public var perWorker: [ProcessUsage]
    /// The backlog's insert (`INSERT ... SELECT generate_series`, 50,000 rows a statement), per row inserted.
    public var insertCost: DatabaseCost?
    /// From just before the worker started to its exit (claims, outcomes, heartbeats, autovacuum), per row finished.
    public var deliveryCost: DatabaseCost?
    /// Broadcast requests the simulator received (the broadcast mix only).
    public var simulatorBroadcasts: Int? = nil
}

extension DrainResult {
    /// CPU time the whole machine spent per notification while the worker ran: the worker's,
    /// the simulator's, and the rest's (PostgreSQL, the bench's polls, anything else).
    public var machineCPUMicrosecondsPerNotification: Double {
        machineBusyCPUs * seconds * 1e6 / Double(max(finished, 1))
    }

    public var simulatorCPUMicrosecondsPerNotification: Double {
        simulatorCPUSeconds * 1e6 / Double(max(finished, 1))
    }
}

public struct CappedConnectionResult: Sendable, Codable {
    public var connection: Int
    public var requests: Int
    /// Requests/second between one second after its first request and one second before its last.
    public var steadyPerSecond: Double
    /// The simulator's sliding one-second window.
    public var maxInOneSecond: Int
}

public struct CappedResult: Sendable, Codable {
    public var connections: Int
    public var cap: Int
    public var seconds: Int
    public var totalRequests: Int
    /// The sum of the connections' steady rates.
    public var aggregatePerSecond: Double
    public var lowestSteadyPerSecond: Double
    public var meanSteadyPerSecond: Double
    public var highestInOneSecond: Int
    public var perConnection: [CappedConnectionResult]
    public var worker: ProcessUsage
    /// Rows finished in the run (the backlog is larger than the run can send).
    public var finished: Int
    /// The worker's whole life (start-up and TLS handshakes included) over the requests it sent.
    public var workerCPUMicrosecondsPerNotification: Double
    public var machineBusyCPUs: Double
    public var insertCost: DatabaseCost?
    public var deliveryCost: DatabaseCost?
}

public struct LatencyResult: Sendable, Codable {
    public var offeredPerSecond: Int
    public var insertedPerSecond: Double
    public var rows: Int
    public var connections: Int
    public var ratePerConnection: Int
    /// created_at to the request's arrival at the simulator (its log has millisecond times).
    public var insertToRequest: LatencySummary?
    /// created_at to finished_at.
    public var insertToOutcome: LatencySummary?
    public var worker: ProcessUsage
    public var workerCPUMicrosecondsPerNotification: Double
    /// From just before the worker started to its exit: one insert per transaction, the
    /// claims and the outcomes, per row (the 50 warm-up rows included).
    public var cost: DatabaseCost?
    /// The inserting session's backend alone, per row: the application's share of the server's CPU.
    public var insertSessionCPUMicrosecondsPerNotification: Double?
}

/// The worker at one steady offered rate (`SteadyRun`).
public struct SteadyResult: Sendable, Codable {
    public var offeredPerSecond: Int
    /// Rows sent before the run and not vacuumed (`--steady-history`).
    public var historyRows: Int
    /// The worker went through PgBouncer (transaction pooling); the floor never does.
    public var throughPgBouncer: Bool
    public var insertedPerSecond: Double
    public var connections: Int
    public var ratePerConnection: Int
    /// Rows inserted in the measured window (after 50 warm-up rows).
    public var rows: Int
    /// From the first measured insert until every row was finished.
    public var seconds: Double
    public var finished: Int
    /// Rows not finished yet when the last row was inserted, and how long the rest took.
    public var unfinishedAtLastInsert: Int
    public var drainSecondsAfterLastInsert: Double
    /// The worker's whole life, and its CPU from the first measured insert to its exit.
    public var worker: ProcessUsage
    public var workerCPUSeconds: Double
    public var workerCPUMicrosecondsPerNotification: Double
    public var workerBusyCPUs: Double
    /// PostgreSQL's CPU (every server process, the inserting session's backend included, the
    /// bench's observing one not) and WAL from the first measured insert until every row was finished.
    public var serverCPUMicrosecondsPerNotification: Double?
    public var serverBusyCPUs: Double?
    public var walBytesPerNotification: Double
    /// The inserting session's backend alone: the application's share.
    public var insertSessionCPUMicrosecondsPerNotification: Double?
    public var machineBusyCPUs: Double
    public var simulatorRequests: Int
    public var duplicateAcceptedAPNsIDs: Int
    /// created_at to the request's arrival at the simulator.
    public var insertToRequest: LatencySummary?
    /// The worker's commits per notification over the whole run (the inserts taken off).
    public var workerTransactionsPerNotification: Double
    /// Rows, commits, WAL and CPU from before the worker started to its exit (warm-up rows
    /// included), with every session's statistics flushed.
    public var cost: DatabaseCost?
    /// The least a worker could cost PostgreSQL at this rate, measured in the same run.
    public var floor: FloorResult?

    /// PostgreSQL's CPU the worker caused, per notification: every server process less the
    /// inserting session.
    public var causedByWorkerMicroseconds: Double? {
        guard let server = serverCPUMicrosecondsPerNotification else { return nil }
        return server - (insertSessionCPUMicrosecondsPerNotification ?? 0)
    }

    /// causedByWorkerMicroseconds / the floor's.
    public var ratioToFloor: Double? {
        guard let ours = causedByWorkerMicroseconds, let floor = floor?.causedByWorkerMicroseconds, floor > 0 else { return nil }
        return ours / floor
    }
}

public struct MachineInfo: Sendable, Codable {
    public var processors: Int
    public var cpuModel: String
    public var memoryMB: Int
    public var kernel: String
    public var postgres: String
    public var database: String
    /// /proc/loadavg when the run started: other work on the machine skews every figure.
    public var loadAverage: String
    /// The simulator's nice value, when raised (see `SimulatorProcess.niceness`).
    public var simulatorNiceness: Int?

    public static func current(postgresVersion: String, database: String) -> MachineInfo {
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

    public static func loadAverageNow() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }
}

/// One target from the issue, measured.
public struct TargetCheck: Sendable, Codable {
    public var target: String
    public var measured: String
    public var holds: Bool
}

/// Everything one `pgpush bench` run measured; the JSON of `--json`.
public struct BenchReport: Sendable, Codable {
    public var startedAt: Date
    public var machine: MachineInfo
    public var options: BenchOptions
    public var databaseCeiling: DatabaseCeilingResult?
    public var transportCeiling: TransportCeilingResult?
    public var uncapped: DrainResult?
    /// The same drain as `uncapped`, with FCM rows, to the FCM simulator (`pgpush mock-fcm`).
    public var fcm: DrainResult?
    public var uncappedRatioOfLowerCeiling: Double?
    /// 1 / (1/database + 1/transport): the rate if the two ceilings' CPU costs simply add up,
    /// which they do when the worker, the simulator and PostgreSQL share the same cores.
    public var combinedCeiling: Double?
    /// The uncapped rate if every core were busy at the CPU cost per notification the
    /// uncapped run measured: the most this machine allows end to end.
    public var allCoresBusyRate: Double?
    /// The embedded cluster's CPU with no session, over 3 s at the start: the fixed cost that
    /// low rates divide by few notifications.
    public var postgresIdleCPUMillisecondsPerSecond: Double?
    public var capped: [CappedResult] = []
    public var latency: LatencyResult?
    public var steady: [SteadyResult] = []
    /// Worker processes side by side under a backlog at the cap (`--scale-workers`).
    public var scale: [DrainResult] = []
    public var faults: DrainResult?
    /// Device pushes and broadcasts to channels in one backlog (`broadcast` scenario).
    public var broadcast: DrainResult?
    public var memory: DrainResult?
    public var history: ClaimAtScaleResult?
    /// The history scenario's finished rows retired by row deletes and by partition drops.
    public var retirement: HistoryRetirementResult?
    public var targets: [TargetCheck] = []
    public var loadAverageAtEnd: String?

    /// The lower of the two ceilings measured, the yardstick of the uncapped ratio.
    public var lowerCeiling: Double? {
        [databaseCeiling?.perSecond, transportCeiling?.perSecond].compactMap { $0 }.min()
    }

    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }
}
