import Foundation
import Postgres

/// A steady offered load: one row per transaction at a fixed rate, paced on an
/// absolute schedule. Latency is measured from each row's created_at to its
/// request arriving at the simulator (joined on the device token) and to its
/// outcome being written (finished_at).
enum LatencyRun {
    static let warmUpTokenBase = 80_000_000

    static func run(in context: BenchContext) throws -> LatencyResult {
        let options = context.options
        let conninfo = try context.database.fresh("latency")
        defer { context.database.discard(conninfo) }
        // The inserter stands for the application; the meter's connection polls and reads the counters.
        let meter = try CostMeter(conninfo: conninfo, database: context.database)
        let connection = try PostgresConnection(conninfo: conninfo)
        let simulator = try SimulatorProcess(executable: context.executable, credentials: context.credentials,
                                             directory: context.directory, name: "latency", logRequests: true)
        let before = try meter.snapshot()
        let inserterBefore = ProcessCPU.preciseSeconds(of: connection.backendPID)
        let worker = try WorkerProcess(executable: context.executable, databaseURL: conninfo, simulator: simulator,
                                       credentials: context.credentials, connections: options.connections,
                                       ratePerConnection: options.latencyCap, directory: context.directory, name: "latency")
        do {
            // Connections open and the first JWT is accepted before the measured rows.
            try BenchRows.fill(connection, count: 50, payloadBytes: options.payloadBytes, firstToken: warmUpTokenBase,
                               analyze: false)
            try waitUntilDrained(meter, worker: worker, timeout: .seconds(30))

            let total = options.latencyRate * options.latencySeconds
            context.progress("latency: inserting \(options.latencyRate)/s for \(options.latencySeconds) s")
            let insertSeconds = try SteadyInserter.insert(connection, rate: options.latencyRate, count: total,
                                                          payloadBytes: options.payloadBytes, alive: worker.checkAlive)
            try waitUntilDrained(meter, worker: worker, timeout: .seconds(60))
            try meter.flush(connection)
            let inserterAfter = ProcessCPU.preciseSeconds(of: connection.backendPID)
            let usage = try worker.stop()
            _ = try simulator.stop()
            try meter.waitForOtherSessions(except: [connection.backendPID])
            let after = try meter.snapshot()

            let (toRequest, toOutcome) = try latencies(connection, simulator: simulator)
            var insertSessionCPU: Double?
            if let first = inserterBefore, let last = inserterAfter { insertSessionCPU = (last - first) * 1e6 / Double(total + 50) }
            return LatencyResult(
                offeredPerSecond: options.latencyRate, insertedPerSecond: Double(total) / insertSeconds, rows: total,
                connections: options.connections, ratePerConnection: options.latencyCap,
                insertToRequest: LatencySummary(milliseconds: toRequest), insertToOutcome: LatencySummary(milliseconds: toOutcome),
                worker: usage, workerCPUMicrosecondsPerNotification: usage.cpuSeconds * 1e6 / Double(total + 50),
                cost: CostMeter.cost(from: before, to: after, notifications: total + 50),
                insertSessionCPUMicrosecondsPerNotification: insertSessionCPU)
        } catch {
            _ = worker.process.stop(signal: SIGKILL)
            _ = try? simulator.stop()
            throw error
        }
    }

    /// Insert → request (created_at to the request's arrival in the simulator's log, joined on
    /// the token) and insert → outcome (finished_at − created_at) of the measured rows, in ms.
    static func latencies(_ connection: PostgresConnection, simulator: SimulatorProcess) throws
        -> (toRequest: [Double], toOutcome: [Double]) {
        let arrivals = try firstArrivals(simulator)
        let rows = try connection.query("""
            SELECT device_token, extract(epoch FROM created_at) * 1000, extract(epoch FROM finished_at - created_at) * 1000
              FROM pgpush.notifications WHERE device_token < $1
            """, [BenchRows.token(warmUpTokenBase)])
        var toRequest: [Double] = [], toOutcome: [Double] = []
        for row in 0..<rows.rowCount {
            if let token = rows.string(row, 0), let created = rows.double(row, 1), let arrived = arrivals[token] {
                toRequest.append(arrived - created)
            }
            if let outcome = rows.double(row, 2) { toOutcome.append(outcome) }
        }
        return (toRequest, toOutcome)
    }

    /// When each device token's first request reached the simulator (the kernel's receive
    /// time where there is one), UNIX milliseconds, from its request log.
    static func firstArrivals(_ simulator: SimulatorProcess) throws -> [String: Double] {
        var arrivals: [String: Double] = [:]
        for entry in try simulator.requestLog() {
            guard let token = entry.token, arrivals[token] == nil else { continue }
            arrivals[token] = entry.receivedMilliseconds ?? Double(entry.timeMilliseconds)
        }
        return arrivals
    }

    static func waitUntilDrained(_ meter: CostMeter, worker: WorkerProcess, timeout: Duration) throws {
        let deadline = ContinuousClock.now + timeout
        while try meter.poll(BenchRows.anyUnfinished) {
            try worker.checkAlive()
            guard ContinuousClock.now < deadline else { throw BenchError("rows still unfinished after \(timeout)") }
            usleep(50_000)
        }
    }
}

/// One row per transaction at a fixed rate on an absolute schedule, as applications insert.
enum SteadyInserter {
    static let notificationSQL = "INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, $2::jsonb)"

    /// Inserts `count` rows (tokens 1...count) at `rate`/s with `sql` (parameters: token,
    /// payload); returns the seconds it took. `alive` is called every two seconds' worth.
    static func insert(_ connection: PostgresConnection, rate: Int, count: Int, payloadBytes: Int,
                       sql: String = notificationSQL, alive: () throws -> Void) throws -> Double {
        let payload = BenchRows.payload(bytes: payloadBytes)
        let clock = ContinuousClock()
        let start = clock.now
        let interval = Duration.seconds(1) / rate
        for index in 0..<count {
            let due = start + interval * index
            let ahead = clock.now.duration(to: due)
            if ahead > .zero { Thread.sleep(forTimeInterval: Double(ahead / .microseconds(1)) / 1e6) }
            try connection.query(sql, [BenchRows.token(index + 1), payload])
            if index > 0 && index % (rate * 2) == 0 { try alive() }
        }
        return Double((clock.now - start) / .microseconds(1)) / 1e6
    }
}
