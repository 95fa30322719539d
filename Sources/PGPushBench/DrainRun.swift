import APNsSimulator
import Foundation
import PGPushCore
import Postgres

/// A worker process against the simulator process: drains a pre-filled backlog
/// (or works on it for a fixed time), then stops gracefully so its CPU time and
/// peak memory can be read.
struct DrainRun {
    var name: String
    var rows: Int
    var connections: Int
    var ratePerConnection: Int
    var simulatorArguments: [String] = []
    var logRequests = false
    /// Stop after this long instead of waiting for the backlog to drain.
    var timeBox: Duration?
    /// Every n-th row a broadcast to one of `channels` (which the simulator knows); 0: none.
    var broadcastEvery = 0
    var channels: [String] = []
    /// The service of every row (and of the simulator the worker sends to).
    var service: Service = .apns

    struct Outcome {
        var result: DrainResult
        var simulator: SimulatorProcess
        var conninfo: String
    }

    /// `pgpush run` processes started side by side (the scale run); one otherwise.
    var workers = 1

    /// Runs it; the caller reads the simulator log if it asked for one, then discards the database.
    func run(in context: BenchContext) throws -> Outcome {
        let conninfo = try context.database.fresh(name)
        let meter = try CostMeter(conninfo: conninfo, database: context.database)
        let connection = meter.connection
        // Started first: the Web Push simulator makes the subscriptions the rows name. It is idle
        // while they are inserted.
        let simulator = try SimulatorProcess(executable: context.executable, credentials: context.credentials,
                                             directory: context.directory, name: name, logRequests: logRequests,
                                             extraArguments: simulatorArguments
                                                 + (channels.isEmpty ? [] : ["--channels", channels.joined(separator: ",")]),
                                             service: service)
        let subscriptions = service == .webpush ? try simulator.subscriptions() : []
        context.progress("\(name): inserting \(rows) rows")
        let beforeFill = try meter.snapshot()
        do {
            try BenchRows.fill(connection, count: rows, payloadBytes: context.options.payloadBytes, broadcastEvery: broadcastEvery,
                               channels: channels, service: service, subscriptions: subscriptions, analyze: false) { done in
                if done % 200_000 == 0 || done == rows { context.progress("\(name): \(done) rows inserted") }
            }
        } catch {
            _ = try? simulator.stop()
            throw error
        }
        let afterFill = try meter.snapshot()
        try meter.poll { try $0.execute(script: "ANALYZE pgpush.notifications") }
        let beforeRun = try meter.snapshot()
        let started = Date()
        let machineAtStart = MachineCPU.now()
        var processes: [WorkerProcess] = []
        do {
            for index in 0..<workers {
                processes.append(try WorkerProcess(
                    executable: context.executable, databaseURL: conninfo, simulator: simulator,
                    credentials: context.credentials, connections: connections, ratePerConnection: ratePerConnection,
                    directory: context.directory, name: workers == 1 ? name : "\(name)-\(index + 1)"))
            }
        } catch {
            for process in processes { _ = process.process.stop(signal: SIGKILL) }
            _ = try? simulator.stop()
            throw error
        }
        let clock = ContinuousClock()
        let deadline = clock.now + (timeBox ?? .seconds(max(120, rows / 500)))
        var lastReport = clock.now
        var unfinished = rows
        do {
            while clock.now < deadline {
                for process in processes { try process.checkAlive() }
                if timeBox == nil, try !meter.poll(BenchRows.anyUnfinished) {
                    unfinished = 0
                    break
                }
                if clock.now - lastReport >= .seconds(2) {
                    unfinished = try meter.poll(BenchRows.unfinished)
                    let elapsed = Double((clock.now - processes[0].startedAt) / .milliseconds(1)) / 1000
                    context.progress(name + String(format: ": %d of %d finished after %.1f s (%.0f/s)", rows - unfinished, rows,
                                            elapsed, Double(rows - unfinished) / max(elapsed, 0.001)))
                    lastReport = clock.now
                }
                usleep(timeBox == nil ? 100_000 : 250_000)
            }
        } catch {
            for process in processes { _ = process.process.stop(signal: SIGKILL) }
            _ = try? simulator.stop()
            throw error
        }
        let stoppedAt = Date()
        let machineBusy = MachineCPU.now().busyCPUs(since: machineAtStart)
        // SIGTERM to every worker first, so they drain side by side, then collect each one.
        for process in processes { process.process.signal(SIGTERM) }
        var usages: [ProcessUsage] = []
        do {
            for process in processes { usages.append(try process.stop(signalled: true)) }
        } catch {
            // A worker that died on the way out must not leave the simulator running.
            for process in processes { _ = process.process.stop(signal: SIGKILL) }
            _ = try? simulator.stop()
            throw error
        }
        let figures: SimulatorFigures
        let simulatorUsage: ProcessUsage
        if service == .fcm {
            let (report, usage) = try simulator.stopFCM()
            figures = SimulatorFigures(requests: report.sends, statuses: report.errors.merging(["200": report.delivered]) { $0 + $1 })
            simulatorUsage = usage
        } else if service == .webpush {
            let (report, usage) = try simulator.stopWebPush()
            figures = SimulatorFigures(requests: report.requests, statuses: report.refusals.merging(["201": report.delivered]) { $0 + $1 })
            simulatorUsage = usage
        } else {
            let (report, usage) = try simulator.stop()
            figures = SimulatorFigures(requests: report.totalRequests, statuses: report.statusCounts, goAwaysSent: report.goAwaysSent,
                                       duplicates: report.duplicateAcceptedAPNsIDs,
                                       broadcasts: report.broadcastsByChannel.values.reduce(0, +))
            simulatorUsage = usage
        }
        try meter.waitForOtherSessions()
        let afterRun = try meter.snapshot()
        let usage = ProcessUsage(userSeconds: usages.map(\.userSeconds).reduce(0, +),
                                 systemSeconds: usages.map(\.systemSeconds).reduce(0, +),
                                 peakResidentBytes: usages.map(\.peakResidentBytes).max() ?? 0)
        let statuses = try BenchRows.statusCounts(connection)
        let finished = rows - (statuses["queued"] ?? 0) - (statuses["sending"] ?? 0)
        let seconds: Double
        if timeBox == nil, let last = try connection.query(
            "SELECT extract(epoch FROM max(finished_at)) FROM pgpush.notifications").double(0, 0) {
            seconds = last - started.timeIntervalSince1970
        } else {
            seconds = stoppedAt.timeIntervalSince(started)
        }
        if timeBox == nil && finished < rows {
            context.progress("\(name): WARNING \(rows - finished) rows unfinished at the deadline")
        }
        var secondHalf: Double?
        if let timeBox {
            let half = Double(timeBox / .milliseconds(1)) / 2000
            let middle = stoppedAt.timeIntervalSince1970 - half
            secondHalf = try connection.query("""
                SELECT count(*) FROM pgpush.notifications
                 WHERE finished_at > to_timestamp($1::float8) AND finished_at <= to_timestamp($2::float8)
                """, [middle, stoppedAt.timeIntervalSince1970]).int(0, 0).map { Double($0) / half }
        }
        let errors = try connection.query("SELECT count(*) FROM pgpush.delivery_errors").int(0, 0) ?? 0
        let failed = try connection.query(
            "SELECT coalesce(last_reason, 'none'), count(*) FROM pgpush.notifications WHERE status = 'failed' GROUP BY 1")
        var failureReasons: [String: Int] = [:]
        for row in 0..<failed.rowCount { failureReasons[failed.string(row, 0) ?? "?"] = failed.int(row, 1) }
        var result = DrainResult(
            rows: rows, connections: connections, ratePerConnection: ratePerConnection, seconds: seconds, finished: finished,
            perSecond: Double(finished) / seconds, steadyPerSecond: try BenchRows.steadyRate(connection), statuses: statuses, failureReasons: failureReasons,
            deliveryErrors: errors, worker: usage,
            workerCPUMicrosecondsPerNotification: usage.cpuSeconds * 1e6 / Double(max(figures.requests, 1)),
            simulatorRequests: figures.requests, simulatorStatuses: figures.statuses, goAwaysSent: figures.goAwaysSent,
            duplicateAcceptedAPNsIDs: figures.duplicates, simulatorCPUSeconds: simulatorUsage.cpuSeconds,
            machineBusyCPUs: machineBusy, secondHalfPerSecond: secondHalf, workers: workers, perWorker: usages,
            insertCost: CostMeter.cost(from: beforeFill, to: afterFill, notifications: rows, countObserver: true),
            deliveryCost: CostMeter.cost(from: beforeRun, to: afterRun, notifications: finished))
        if !channels.isEmpty { result.simulatorBroadcasts = figures.broadcasts }
        return Outcome(result: result, simulator: simulator, conninfo: conninfo)
    }

    /// What either simulator counted that a drain reports: requests, answers by status
    /// (FCM: delivered as "200", errors by code), and APNs's GOAWAYs, duplicates, broadcasts.
    struct SimulatorFigures {
        var requests: Int
        var statuses: [String: Int]
        var goAwaysSent = 0
        var duplicates = 0
        var broadcasts = 0
    }
}
