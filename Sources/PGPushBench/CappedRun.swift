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
            times[entry.connection, default: []].append(entry.timeMilliseconds)
        }
        var perConnection: [CappedConnectionResult] = []
        var steadyTotal = 0
        var commonStart = Int64.min, commonEnd = Int64.max
        for (id, arrivals) in times.sorted(by: { $0.key < $1.key }) {
            let sorted = arrivals.sorted()
            guard let first = sorted.first, let last = sorted.last, last - first > 3000 else { continue }
            let start = first + 1000, end = last - 1000
            commonStart = max(commonStart, start)
            commonEnd = min(commonEnd, end)
            let inside = sorted.filter { $0 >= start && $0 < end }.count
            perConnection.append(CappedConnectionResult(
                connection: id, requests: sorted.count, steadyPerSecond: Double(inside) * 1000 / Double(end - start),
                maxInOneSecond: maxima[id] ?? 0))
        }
        if commonEnd > commonStart {
            steadyTotal = times.values.reduce(0) { $0 + $1.filter { $0 >= commonStart && $0 < commonEnd }.count }
        }
        let rates = perConnection.map(\.steadyPerSecond)
        return CappedResult(
            connections: connections, cap: options.cap, seconds: options.cappedSeconds,
            totalRequests: report.totalRequests,
            aggregatePerSecond: commonEnd > commonStart ? Double(steadyTotal) * 1000 / Double(commonEnd - commonStart) : 0,
            lowestSteadyPerSecond: rates.min() ?? 0,
            meanSteadyPerSecond: rates.isEmpty ? 0 : rates.reduce(0, +) / Double(rates.count),
            highestInOneSecond: report.maxRequestsPerConnectionPerSecond, perConnection: perConnection,
            worker: outcome.result.worker)
    }
}
