import Foundation
import Postgres
import PushQueue

/// `pgpush bench`: runs the chosen scenarios in order and gathers a `BenchReport`.
package final class Benchmark {
    package let options: BenchOptions
    /// Progress lines, each prefixed with the time since the start.
    private let progress: @Sendable (String) -> Void

    package init(options: BenchOptions, progress sink: @escaping @Sendable (String) -> Void) {
        self.options = options
        let began = ContinuousClock.now
        progress = { message in
            let elapsed = Double((ContinuousClock.now - began) / .milliseconds(100)) / 10
            sink(String(format: "[%6.1f s] ", elapsed) + message)
        }
    }

    /// `databaseURL` nil: an embedded throwaway cluster. `executable`: the pgpush binary
    /// that runs `mock-apns` and `run` in their own processes.
    package func run(databaseURL: String?, sqlDirectory: String, executable: String) throws -> BenchReport {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-bench-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer {
            if options.keepFiles { progress("files kept in \(directory)") } else { try? FileManager.default.removeItem(atPath: directory) }
        }
        progress(databaseURL == nil ? "starting an embedded PostgreSQL cluster" : "using DATABASE_URL")
        let database = try BenchDatabase(externalURL: databaseURL, sqlDirectory: sqlDirectory, pooled: options.throughPgBouncer)
        defer { database.stop() }
        let context = BenchContext(executable: executable, directory: directory,
                                   credentials: try BenchCredentials.generate(in: directory), database: database,
                                   options: options, progress: progress)
        let versionDatabase = try database.fresh("version")
        let version = try PostgresConnection(conninfo: versionDatabase).query("SHOW server_version").string(0, 0) ?? "?"
        database.discard(versionDatabase)
        var report = BenchReport(startedAt: Date(), machine: .current(postgresVersion: version, database: database.description),
                                 options: options)
        let chosen = Set(options.scenarios)
        if let postmaster = database.postmasterPID, let before = ProcessCPU.cluster(postmaster: postmaster) {
            sleep(3)
            if let after = ProcessCPU.cluster(postmaster: postmaster) {
                report.postgresIdleCPUMillisecondsPerSecond = (after - before) * 1000 / 3
            }
        }

        if chosen.contains(.database) { report.databaseCeiling = try databaseCeiling(context) }
        if chosen.contains(.transport) { report.transportCeiling = try transportCeiling(context) }
        if chosen.contains(.uncapped) {
            progress("uncapped: \(options.rows) rows, \(options.connections) connections, no cap")
            let outcome = try DrainRun(name: "uncapped", rows: options.rows, connections: options.connections,
                                       ratePerConnection: 0).run(in: context)
            database.discard(outcome.conninfo)
            report.uncapped = outcome.result
            if let lower = report.lowerCeiling { report.uncappedRatioOfLowerCeiling = outcome.result.perSecond / lower }
            if let database = report.databaseCeiling?.perSecond, let transport = report.transportCeiling?.perSecond {
                report.combinedCeiling = 1 / (1 / database + 1 / transport)
            }
            report.allCoresBusyRate = Double(report.machine.processors) * 1e6
                / max(outcome.result.machineCPUMicrosecondsPerNotification, 1e-3)
            progress(String(format: "uncapped: %.0f/s (steady %.0f/s), worker %.1f µs CPU/notification, %.1f MB peak",
                            outcome.result.perSecond, outcome.result.steadyPerSecond ?? 0,
                            outcome.result.workerCPUMicrosecondsPerNotification,
                            Double(outcome.result.worker.peakResidentBytes) / 1_048_576))
        }
        if chosen.contains(.fcm) {
            progress("fcm: \(options.rows) FCM rows, \(options.connections) connections, no cap, to mock-fcm")
            let outcome = try DrainRun(name: "fcm", rows: options.rows, connections: options.connections, ratePerConnection: 0,
                                       service: .fcm).run(in: context)
            database.discard(outcome.conninfo)
            report.fcm = outcome.result
            progress(String(format: "fcm: %.0f/s, worker %.1f µs CPU/notification, %.1f MB peak",
                            outcome.result.perSecond, outcome.result.workerCPUMicrosecondsPerNotification,
                            Double(outcome.result.worker.peakResidentBytes) / 1_048_576))
        }
        if chosen.contains(.capped) {
            for connections in options.cappedConnections {
                progress("capped: \(connections) connection(s) at \(options.cap)/s for \(options.cappedSeconds) s")
                let result = try CappedRun.run(connections: connections, in: context)
                report.capped.append(result)
                progress(String(format: "capped: %d connection(s): lowest steady %.1f/s, highest in 1 s %d, total %.0f/s",
                                connections, result.lowestSteadyPerSecond, result.highestInOneSecond, result.aggregatePerSecond))
            }
        }
        if chosen.contains(.latency) {
            let result = try LatencyRun.run(in: context)
            report.latency = result
            progress(String(format: "latency: insert→request p50 %.1f ms p99 %.1f ms",
                            result.insertToRequest?.p50 ?? .nan, result.insertToRequest?.p99 ?? .nan))
        }
        if chosen.contains(.steady) {
            for rate in options.steadyRates {
                let result = try SteadyRun.run(rate: rate, in: context)
                report.steady.append(result)
                progress(String(format: "steady: %d/s: worker %.1f µs CPU/notification, PostgreSQL %.1f µs, WAL %.2f kB",
                                rate, result.workerCPUMicrosecondsPerNotification,
                                result.serverCPUMicrosecondsPerNotification ?? .nan, result.walBytesPerNotification / 1000))
            }
        }
        if chosen.contains(.scale) {
            for workers in options.scaleWorkers {
                let connections = options.scaleConnections
                progress("scale: \(workers) worker(s) × \(connections) connections at \(options.cap)/s for \(options.scaleSeconds) s")
                let outcome = try DrainRun(name: "scale\(workers)",
                                           rows: workers * connections * options.cap * (options.scaleSeconds + 5),
                                           connections: connections, ratePerConnection: options.cap,
                                           timeBox: .seconds(options.scaleSeconds), workers: workers).run(in: context)
                database.discard(outcome.conninfo)
                report.scale.append(outcome.result)
                progress(String(format: "scale: %d worker(s): %.0f/s in the second half, PostgreSQL %.1f µs CPU/notification",
                                workers, outcome.result.secondHalfPerSecond ?? outcome.result.perSecond,
                                outcome.result.deliveryCost?.serverCPUMicrosecondsPerNotification ?? .nan))
            }
        }
        if chosen.contains(.faults) {
            progress("faults: \(options.faultRows) rows, mix \(options.faultMix), GOAWAY every \(options.goAwayAfter) streams")
            let outcome = try DrainRun(name: "faults", rows: options.faultRows, connections: options.connections, ratePerConnection: 0,
                                       simulatorArguments: ["--fault-mix", options.faultMix, "--goaway-after",
                                                            String(options.goAwayAfter), "--seed", "7"], logRequests: options.keepFiles).run(in: context)
            database.discard(outcome.conninfo)
            report.faults = outcome.result
            progress(String(format: "faults: %.0f/s over the whole drain (steady %.0f/s)", outcome.result.perSecond,
                            outcome.result.steadyPerSecond ?? 0))
        }
        if chosen.contains(.broadcast) {
            let channels = BenchRows.channels(options.broadcastChannels)
            progress("broadcast: \(options.broadcastRows) rows, every \(options.broadcastEvery) a Live Activity update "
                     + "to one of \(channels.count) channels, \(options.connections) connections, no cap")
            let outcome = try DrainRun(name: "broadcast", rows: options.broadcastRows, connections: options.connections,
                                       ratePerConnection: 0, broadcastEvery: options.broadcastEvery,
                                       channels: channels).run(in: context)
            database.discard(outcome.conninfo)
            report.broadcast = outcome.result
            progress(String(format: "broadcast: %.0f/s over the whole drain (steady %.0f/s), %d broadcasts",
                            outcome.result.perSecond, outcome.result.steadyPerSecond ?? 0, outcome.result.simulatorBroadcasts ?? 0))
        }
        if chosen.contains(.memory) {
            progress("memory: backlog of \(options.memoryRows) rows, uncapped worker for \(options.memorySeconds) s")
            let outcome = try DrainRun(name: "memory", rows: options.memoryRows, connections: options.connections,
                                       ratePerConnection: 0, timeBox: .seconds(options.memorySeconds)).run(in: context)
            database.discard(outcome.conninfo)
            report.memory = outcome.result
            progress(String(format: "memory: peak %.1f MB", Double(outcome.result.worker.peakResidentBytes) / 1_048_576))
        }
        if chosen.contains(.history) {
            let conninfo = try context.database.fresh("history")
            report.history = try ClaimAtScale.run(conninfo: conninfo, finishedRows: options.historyRows,
                                                  payloadBytes: options.payloadBytes, progress: progress)
            context.database.discard(conninfo)
            if let history = report.history {
                progress(String(format: "history: claim of %d rows p50 %.1f ms without history, %.1f ms with %d finished rows",
                                history.claimBatch, history.withoutHistory?.p50 ?? .nan, history.withHistory?.p50 ?? .nan,
                                history.finishedRows))
            }
            report.retirement = try HistoryRetirement.run(database: context.database, rows: options.historyRows,
                                                          payloadBytes: options.payloadBytes, progress: progress)
        }
        if chosen.contains(.lanes) {
            let result = try LaneRun.run(in: context)
            report.lanes = result
            progress(String(format: "lanes: urgent insert→request p50 %.1f ms under %d bulk rows (empty queue %.1f ms)",
                            result.urgentUnderBacklog?.p50 ?? .nan, result.backlog, result.urgentEmptyQueue?.p50 ?? .nan))
        }
        if chosen.contains(.web) {
            let result = try StatusPageRun.run(in: context)
            report.web = result
            progress(String(format: "web: overview p50 %.1f ms with %d finished and %d queued rows (round trip %.2f ms, counting everything %.0f ms)",
                            result.overview?.p50 ?? .nan, result.finishedRows, result.queuedRows, result.roundTrip?.p50 ?? .nan,
                            result.countEverything?.p50 ?? .nan))
        }
        if chosen.contains(.webpush) {
            progress("webpush: sealing \(options.webPushMessages) messages of \(options.payloadBytes) bytes (RFC 8291)")
            let result = try WebPushSealRun.run(messages: options.webPushMessages, payloadBytes: options.payloadBytes)
            report.webPush = result
            progress(String(format: "webpush: %.1f µs per message sealed, %.1f µs its floor (a key pair and an ECDH)",
                            result.sealMicroseconds, result.floorMicroseconds))
            progress("webpush: \(options.rows) Web Push rows, \(options.connections) connections, no cap, to mock-webpush")
            let outcome = try DrainRun(name: "webpush", rows: options.rows, connections: options.connections, ratePerConnection: 0,
                                       service: .webpush).run(in: context)
            database.discard(outcome.conninfo)
            report.webPushDrain = outcome.result
            progress(String(format: "webpush: %.0f/s, worker %.1f µs CPU/notification, %.1f MB peak",
                            outcome.result.perSecond, outcome.result.workerCPUMicrosecondsPerNotification,
                            Double(outcome.result.worker.peakResidentBytes) / 1_048_576))
        }
        report.targets = TargetEvaluation.evaluate(report)
        report.loadAverageAtEnd = MachineInfo.loadAverageNow()
        return report
    }

    private func databaseCeiling(_ context: BenchContext) throws -> DatabaseCeilingResult {
        let conninfo = try context.database.fresh("database")
        defer { context.database.discard(conninfo) }
        progress("database ceiling: inserting \(options.rows) rows")
        try BenchRows.fill(PostgresConnection(conninfo: conninfo), count: options.rows, payloadBytes: options.payloadBytes)
        progress("database ceiling: claim + complete")
        let total = options.rows
        let result = try DatabaseCeiling.run(conninfo: conninfo, rows: total) { [progress] done in
            if done % 50_000 < 2000 { progress("database ceiling: \(done) of \(total) written") }
        }
        progress(String(format: "database ceiling: %.0f rows/s", result.perSecond))
        return result
    }

    private func transportCeiling(_ context: BenchContext) throws -> TransportCeilingResult {
        progress("transport ceiling: \(options.transportRequests) requests, \(options.connections) connections, no cap")
        let simulator = try SimulatorProcess(executable: context.executable, credentials: context.credentials,
                                             directory: context.directory, name: "transport", logRequests: false)
        let measured: (seconds: Double, delivered: Int, clientCPUSeconds: Double, machineBusyCPUs: Double)
        do {
            measured = try TransportCeiling.run(simulator: simulator, credentials: context.credentials,
                                                requests: options.transportRequests, connections: options.connections,
                                                payloadBytes: options.payloadBytes) { [progress] done in
                progress("transport ceiling: \(done) answered")
            }
        } catch {
            _ = try? simulator.stop()
            throw error
        }
        let (_, usage) = try simulator.stop()
        let result = TransportCeilingResult(
            requests: options.transportRequests, connections: options.connections, inFlight: TransportCeiling.inFlight,
            seconds: measured.seconds, perSecond: Double(options.transportRequests) / measured.seconds,
            delivered: measured.delivered, simulatorCPUSeconds: usage.cpuSeconds, clientCPUSeconds: measured.clientCPUSeconds,
            machineBusyCPUs: measured.machineBusyCPUs)
        progress(String(format: "transport ceiling: %.0f requests/s", result.perSecond))
        return result
    }
}
