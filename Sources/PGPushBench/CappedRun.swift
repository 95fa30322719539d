import APNsSimulator
import Foundation

/// The default cap under a backlog: each connection's steady rate and its
/// busiest one-second window, as the simulator saw them.
enum CappedRun {
    static func run(connections: Int, in context: BenchContext) throws -> CappedResult {
        let options = context.options
        let name = "capped\(connections)"
        let drain = DrainRun(name: name, rows: options.cap * connections * (options.cappedSeconds + 5), connections: connections,
                             ratePerConnection: options.cap, logRequests: true,
                             timeBox: .seconds(options.cappedSeconds))
        let outcome = try drain.run(in: context)
        defer { context.database.discard(outcome.conninfo) }
        let report = try JSONDecoder().decode(SimulatorReport.self,
                                              from: FileManager.default.contents(atPath: outcome.simulator.reportPath) ?? Data())
        let maxima = Dictionary(report.connections.map { ($0.id, $0.maxRequestsInOneSecond) }, uniquingKeysWith: max)
        var times: [Int: [Int64]] = [:]
        for entry in try outcome.simulator.requestLog() where entry.outcome == "answered" {
            times[entry.connection, default: []].append(entry.receivedMilliseconds.map { Int64($0.rounded()) } ?? entry.timeMilliseconds)
        }
        var perConnection: [CappedConnectionResult] = []
        for (id, arrivals) in times.sorted(by: { $0.key < $1.key }) {
            guard let rate = steadyRate(arrivals.sorted(), cap: options.cap) else { continue }
            perConnection.append(CappedConnectionResult(connection: id, requests: arrivals.count, steadyPerSecond: rate,
                                                        maxInOneSecond: maxima[id] ?? 0))
        }
        let rates = perConnection.map(\.steadyPerSecond)
        return CappedResult(
            connections: connections, cap: options.cap, seconds: options.cappedSeconds,
            totalRequests: report.totalRequests,
            aggregatePerSecond: rates.reduce(0, +),
            lowestSteadyPerSecond: rates.min() ?? 0,
            meanSteadyPerSecond: rates.isEmpty ? 0 : rates.reduce(0, +) / Double(rates.count),
            highestInOneSecond: report.maxRequestsPerConnectionPerSecond, perConnection: perConnection,
            worker: outcome.result.worker, finished: outcome.result.finished,
            workerCPUMicrosecondsPerNotification: outcome.result.workerCPUMicrosecondsPerNotification,
            machineBusyCPUs: outcome.result.machineBusyCPUs, insertCost: outcome.result.insertCost,
            deliveryCost: outcome.result.deliveryCost)
    }

    /// The time a whole number of caps' worth of requests took, from the first request one
    /// second in to the last one a second before the end. Whole multiples of the cap make
    /// the figure exact whether the limiter spaces requests evenly or sends each second's
    /// allowance in a burst (the start and end fall at the same place in a burst).
    static func steadyRate(_ arrivals: [Int64], cap: Int) -> Double? {
        guard let first = arrivals.first, let last = arrivals.last,
              let startIndex = arrivals.firstIndex(where: { $0 >= first + 1000 }) else { return nil }
        var multiples = 0
        while startIndex + (multiples + 1) * cap < arrivals.count, arrivals[startIndex + (multiples + 1) * cap] <= last - 1000 {
            multiples += 1
        }
        let endIndex = startIndex + multiples * cap
        guard multiples >= 1, arrivals[endIndex] > arrivals[startIndex] else { return nil }
        return Double(multiples * cap) * 1000 / Double(arrivals[endIndex] - arrivals[startIndex])
    }
}
