import Foundation

extension BenchReport {
    /// The human-readable summary `pgpush bench` prints.
    package func table() -> String {
        var lines: [String] = []
        func row(_ label: String, _ value: String) {
            lines.append("  " + label.padding(toLength: 44, withPad: " ", startingAt: 0) + value)
        }
        func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1_048_576) }
        func rate(_ value: Double?) -> String { value.map { String(format: "%.0f/s", $0) } ?? "n/a" }
        func costRows(_ insert: DatabaseCost?, _ delivery: DatabaseCost?) {
            if let insert { row("  PostgreSQL per row: bulk insert", insert.summary) }
            if let delivery {
                row("  PostgreSQL per row: claim + outcome", delivery.summary
                    + (delivery.serverBusyCPUs.map { String(format: " (%.2f CPUs)", $0) } ?? ""))
                if let share = delivery.notificationHOTShare {
                    row("    notifications updates HOT", String(format: "%.1f%% of %d (WAL records %.1f/row, %d full-page images)",
                                                               share * 100, delivery.notificationUpdates,
                                                               Double(delivery.walRecords) / Double(max(delivery.notifications, 1)),
                                                               delivery.walFullPageImages))
                }
            }
        }
        lines.append("pgpush bench — \(machine.processors) CPUs (\(machine.cpuModel)), \(machine.memoryMB) MB, "
                     + "PostgreSQL \(machine.postgres)")
        lines.append("  load average at start \(machine.loadAverage), at end \(loadAverageAtEnd ?? "?") (other work skews figures)")
        lines.append(machine.simulatorNiceness.map { "  simulator at nice \($0), as if on machines of its own like APNs" }
                     ?? "  simulator at the worker's priority (not root): it lags when the cores are busy")
        if let idle = postgresIdleCPUMillisecondsPerSecond {
            row("PostgreSQL idle (no session)", String(format: "%.2f ms CPU per second, every server process", idle))
        }
        if let database = databaseCeiling {
            row("database ceiling (claim + complete)", String(format: "%.0f rows/s  (%d rows in %.2f s)",
                                                              database.perSecond, database.rows, database.seconds))
            row("  CPU: bench client; machine busy",
                String(format: "%.1f µs/row; %.2f of %d CPUs", database.clientCPUSeconds * 1e6 / Double(database.rows),
                       database.machineBusyCPUs, machine.processors))
        }
        if let transport = transportCeiling {
            row("transport ceiling (HTTP/2, \(transport.connections) conn.)",
                String(format: "%.0f requests/s  (%d in %.2f s, %d × 200)", transport.perSecond, transport.requests,
                       transport.seconds, transport.delivered))
            row("  CPU: client, simulator, machine busy", String(format: "%.1f µs/request, %.1f µs/request, %.2f of %d CPUs",
                                                                 transport.clientCPUSeconds * 1e6 / Double(transport.requests),
                                                                 transport.simulatorCPUSeconds * 1e6 / Double(transport.requests),
                                                                 transport.machineBusyCPUs, machine.processors))
        }
        if let uncapped {
            row("uncapped end to end (\(uncapped.connections) conn.)",
                String(format: "%.0f/s  (steady ", uncapped.perSecond) + rate(uncapped.steadyPerSecond)
                + String(format: "; %d rows in %.2f s)", uncapped.finished, uncapped.seconds))
            if let ratio = uncappedRatioOfLowerCeiling { row("  ratio of the lower ceiling", String(format: "%.1f%%", ratio * 100)) }
            if let combined = combinedCeiling {
                row("  ratio of the combined ceiling", String(format: "%.1f%%  (1/(1/db + 1/transport) = %.0f/s)",
                                                              uncapped.perSecond / combined * 100, combined))
            }
            row("  worker CPU per notification", String(format: "%.1f µs  (user %.2f s + sys %.2f s)",
                                                        uncapped.workerCPUMicrosecondsPerNotification,
                                                        uncapped.worker.userSeconds, uncapped.worker.systemSeconds))
            row("  worker peak RSS", megabytes(uncapped.worker.peakResidentBytes))
            row("  simulator CPU; machine busy", String(format: "%.1f µs/request; %.2f of %d CPUs",
                                                        uncapped.simulatorCPUSeconds * 1e6 / Double(max(uncapped.simulatorRequests, 1)),
                                                        uncapped.machineBusyCPUs, machine.processors))
            let whole = uncapped.machineCPUMicrosecondsPerNotification
            let simulator = uncapped.simulatorCPUMicrosecondsPerNotification
            let worker = uncapped.workerCPUMicrosecondsPerNotification
            row("  CPU per notification, whole machine",
                String(format: "%.1f µs = worker %.1f + simulator %.1f + PostgreSQL and the rest %.1f",
                       whole, worker, simulator, whole - worker - simulator))
            if let allBusy = allCoresBusyRate {
                row("  at that cost all \(machine.processors) CPUs allow", String(format: "%.0f/s", allBusy)
                    + (lowerCeiling.map { String(format: " (%.1f%% of the lower ceiling)", allBusy / $0 * 100) } ?? ""))
            }
            costRows(uncapped.insertCost, uncapped.deliveryCost)
        }
        for (label, simulator, drain) in [("FCM end to end", "mock-fcm", fcm), ("Web Push end to end", "mock-webpush", webPushDrain)] {
            guard let drain else { continue }
            row("\(label) (\(drain.connections) conn., \(simulator))",
                String(format: "%.0f/s  (steady ", drain.perSecond) + rate(drain.steadyPerSecond)
                + String(format: "; %d rows in %.2f s)", drain.finished, drain.seconds))
            row("  worker CPU per notification", String(format: "%.1f µs  (user %.2f s + sys %.2f s)",
                                                        drain.workerCPUMicrosecondsPerNotification,
                                                        drain.worker.userSeconds, drain.worker.systemSeconds)
                + (uncapped.map { String(format: "; APNs in the same run %.1f µs", $0.workerCPUMicrosecondsPerNotification) } ?? ""))
            if simulator == "mock-webpush", let webPush {
                row("  of which sealing (RFC 8291)", String(format: "%.1f µs per message, %.0f%% of the worker's CPU",
                                                           webPush.sealMicroseconds,
                                                           webPush.sealMicroseconds / max(drain.workerCPUMicrosecondsPerNotification, 1e-3) * 100))
            }
            row("  worker peak RSS", megabytes(drain.worker.peakResidentBytes))
            row("  CPU per notification, whole machine",
                String(format: "%.1f µs = worker %.1f + simulator %.1f + PostgreSQL and the rest %.1f",
                       drain.machineCPUMicrosecondsPerNotification, drain.workerCPUMicrosecondsPerNotification,
                       drain.simulatorCPUMicrosecondsPerNotification,
                       drain.machineCPUMicrosecondsPerNotification - drain.workerCPUMicrosecondsPerNotification
                           - drain.simulatorCPUMicrosecondsPerNotification))
            costRows(drain.insertCost, drain.deliveryCost)
        }
        for capped in capped {
            row("capped \(capped.cap)/s × \(capped.connections) conn., \(capped.seconds) s",
                String(format: "per conn. steady mean %.1f/s, lowest %.1f/s; max in 1 s %d; total %.0f/s",
                       capped.meanSteadyPerSecond, capped.lowestSteadyPerSecond, capped.highestInOneSecond,
                       capped.aggregatePerSecond))
            row("  worker CPU; machine busy", String(format: "%.1f µs/notification (%d finished); %.2f of %d CPUs",
                                                     capped.workerCPUMicrosecondsPerNotification, capped.finished,
                                                     capped.machineBusyCPUs, machine.processors))
            costRows(capped.insertCost, capped.deliveryCost)
        }
        if let lanes {
            row("lanes (\(lanes.backlog) bulk rows ahead)",
                "\(lanes.urgentRows) urgent rows; \(lanes.connections) conn. at \(lanes.cap)/s; without lanes "
                + String(format: "%.0f s behind the backlog", lanes.withoutLanesWaitSeconds))
            for (label, summary) in [("  urgent insert → request", lanes.urgentUnderBacklog),
                                     ("  the same, queue empty (floor)", lanes.urgentEmptyQueue)] {
                guard let summary else { row(label, "no data"); continue }
                row(label, String(format: "p50 %.1f  p90 %.1f  max %.1f ms", summary.p50, summary.p90, summary.max))
            }
            for claim in lanes.claims {
                for (label, summary) in [("  claim of \(claim.rows) row(s), lanes", claim.withLanes),
                                         ("  the same, 017's claim", claim.beforeLanes)] {
                    guard let summary else { row(label, "no data"); continue }
                    row(label, String(format: "p50 %.3f  p90 %.3f  max %.3f ms", summary.p50, summary.p90, summary.max))
                }
            }
        }
        if let web {
            row("web (\(web.finishedRows) finished, \(web.queuedRows) queued)",
                "\(web.finishedLastHour) finished in the last hour; ms per answer, queries and HTML")
            for (label, summary) in [("  overview /", web.overview), ("  failures /failures?app=news", web.failures),
                                     ("  one row /notifications/ID", web.notification),
                                     ("  SELECT 1 round trip (floor)", web.roundTrip),
                                     ("  every row counted by status", web.countEverything)] {
                guard let summary else { row(label, "no data"); continue }
                row(label, String(format: "p50 %.2f  p90 %.2f  max %.2f ms", summary.p50, summary.p90, summary.max))
            }
        }
        if let latency {
            let cap = latency.ratePerConnection == 0 ? "uncapped" : "\(latency.ratePerConnection)/s per conn."
            row("latency at \(latency.offeredPerSecond)/s (\(latency.connections) conn., \(cap))",
                String(format: "inserted at %.0f/s, %d rows", latency.insertedPerSecond, latency.rows))
            for (label, summary) in [("  insert → request at simulator", latency.insertToRequest),
                                     ("  insert → outcome written", latency.insertToOutcome)] {
                guard let summary else { row(label, "no data"); continue }
                row(label, String(format: "p50 %.1f  p90 %.1f  p99 %.1f  max %.1f ms", summary.p50, summary.p90,
                                  summary.p99, summary.max))
            }
            row("  worker CPU per notification", String(format: "%.1f µs", latency.workerCPUMicrosecondsPerNotification))
            if let cost = latency.cost {
                row("  PostgreSQL: insert + claim + outcome", cost.summary)
                if let insert = latency.insertSessionCPUMicrosecondsPerNotification {
                    row("    of the PG CPU, the inserting session", String(format: "%.1f µs", insert))
                }
            }
        }
        if !steady.isEmpty {
            lines.append("  steady offered rate, one insert per transaction, twice the connections at \(options.cap)/s "
                         + "the rate needs (per notification):")
        }
        func micro(_ value: Double?) -> String { value.map { String(format: "%.1f µs", $0) } ?? "n/a" }
        for run in steady {
            let busy = run.serverBusyCPUs.map { String(format: "%.2f", $0) } ?? "n/a"
            row("    \(run.offeredPerSecond)/s, \(run.connections) conn." + (run.throughPgBouncer ? ", PgBouncer" : "")
                    + (run.historyRows > 0 ? ", \(run.historyRows) dead" : ""),
                String(format: "worker %.1f µs (%.2f CPUs); PostgreSQL %@ (%@ CPUs): caused by the worker %@, insert session %@",
                       run.workerCPUMicrosecondsPerNotification, run.workerBusyCPUs,
                       micro(run.serverCPUMicrosecondsPerNotification), busy, micro(run.causedByWorkerMicroseconds),
                       micro(run.insertSessionCPUMicrosecondsPerNotification)))
            for (label, floor, ratio) in [("      floor (pgbench, prepared, minimal table)", run.floor, run.ratioToFloor),
                                          ("      floor through PgBouncer (unprepared)", run.pooledFloor, run.ratioToPooledFloor)] {
                guard let floor else { continue }
                row(label, String(format: "caused by the claimer %@, insert session %@, WAL %.2f kB, %.2f transactions; pgpush / floor %@",
                                  micro(floor.causedByWorkerMicroseconds), micro(floor.insertSessionCPUMicrosecondsPerNotification),
                                  floor.walBytesPerNotification / 1000, floor.workerTransactionsPerNotification,
                                  ratio.map { String(format: "%.2f×", $0) } ?? "n/a"))
            }
            if let peer = run.transportPeer {
                row("      transport peer (h2load, no database)",
                    String(format: "%.1f µs CPU/request (%d of %d requests 2xx); pgpush worker / peer %@",
                           peer.cpuMicrosecondsPerRequest, peer.answered2xx, peer.requests,
                           run.ratioToTransportPeer.map { String(format: "%.2f×", $0) } ?? "n/a"))
            }
            row("      WAL; worker transactions; insert → request",
                String(format: "%.2f kB; %.2f; ", run.walBytesPerNotification / 1000, run.workerTransactionsPerNotification)
                    + (run.insertToRequest.map { String(format: "p50 %.1f  p99 %.1f  max %.1f ms", $0.p50, $0.p99, $0.max) } ?? "n/a"))
            row("      inserted; unfinished at end; drained",
                String(format: "%.0f/s; %d rows; %.2f s after; machine busy %.2f of %d CPUs", run.insertedPerSecond,
                       run.unfinishedAtLastInsert, run.drainSecondsAfterLastInsert, run.machineBusyCPUs, machine.processors))
            if let cost = run.cost { row("      whole run (warm-up and start-up too)", cost.summary) }
        }
        for run in scale {
            let perWorker = run.perWorker.map { String(format: "%.2f", $0.cpuSeconds / max(run.seconds, 1e-3)) }
                .joined(separator: ", ")
            row("scale: \(run.workers) worker(s) × \(run.connections) conn. at \(run.ratePerConnection)/s",
                String(format: "second half %@ (cap allows %d/s); %d rows in %.1f s, %.0f/s", rate(run.secondHalfPerSecond),
                       run.workers * run.connections * run.ratePerConnection, run.finished, run.seconds, run.perSecond))
            row("  worker CPU; per worker; machine busy",
                String(format: "%.1f µs/notification; %@ CPUs; %.2f of %d CPUs", run.workerCPUMicrosecondsPerNotification,
                       perWorker, run.machineBusyCPUs, machine.processors))
            if let cost = run.deliveryCost {
                row("  PostgreSQL: claim + outcome", cost.summary
                    + (cost.serverBusyCPUs.map { String(format: " (%.2f CPUs)", $0) } ?? ""))
            }
        }
        if let faults {
            row("faults (\(options.faultMix), GOAWAY/\(options.goAwayAfter))",
                String(format: "%.0f/s whole drain (steady ", faults.perSecond) + rate(faults.steadyPerSecond)
                + String(format: "); %d rows in %.2f s", faults.finished, faults.seconds))
            let statuses = faults.statuses.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            row("  requests, retries recorded, GOAWAYs", "\(faults.simulatorRequests), \(faults.deliveryErrors), \(faults.goAwaysSent)")
            row("  final statuses; duplicates delivered", "\(statuses); \(faults.duplicateAcceptedAPNsIDs)")
            if !faults.failureReasons.isEmpty {
                row("  failed rows by reason", faults.failureReasons.sorted { $0.key < $1.key }
                    .map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
        }
        if let broadcast {
            row("broadcast mix (1 in \(options.broadcastEvery) to \(options.broadcastChannels) channels)",
                String(format: "%.0f/s whole drain (steady ", broadcast.perSecond) + rate(broadcast.steadyPerSecond)
                + String(format: "); %d rows in %.2f s", broadcast.finished, broadcast.seconds))
            row("  requests; of them broadcasts; statuses", "\(broadcast.simulatorRequests); \(broadcast.simulatorBroadcasts ?? 0); "
                + broadcast.statuses.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            row("  worker CPU per notification", String(format: "%.1f µs", broadcast.workerCPUMicrosecondsPerNotification))
            costRows(broadcast.insertCost, broadcast.deliveryCost)
        }
        if let memory {
            row("memory: backlog \(memory.rows) rows, \(Int(memory.seconds.rounded())) s",
                "peak RSS \(megabytes(memory.worker.peakResidentBytes)), \(memory.simulatorRequests) sent")
        }
        if let history {
            row("history: claim of \(history.claimBatch) rows, \(history.claimsTimed)×",
                String(format: "p50 %.1f ms (p90 %.1f) without history", history.withoutHistory?.p50 ?? .nan,
                       history.withoutHistory?.p90 ?? .nan))
            row("  with \(history.finishedRows) finished rows",
                String(format: "p50 %.1f ms (p90 %.1f); table %@; plan %@", history.withHistory?.p50 ?? .nan,
                       history.withHistory?.p90 ?? .nan, megabytes(Int(history.tableBytes)),
                       history.usesQueuedIndex ? "reads notifications_queued_due" : "does NOT use the queued index"))
            lines.append("    claim plan with the history in place (EXPLAIN ANALYZE, BUFFERS):")
            lines.append(contentsOf: history.plan.map { "      " + $0 })
        }
        if let webPush {
            row("Web Push encryption (\(webPush.payloadBytes) B → \(webPush.bodyBytes) B)",
                String(format: "%.1f µs per message; floor %.1f µs (P-256 key pair + ECDH); %.2f× the floor",
                       webPush.sealMicroseconds, webPush.floorMicroseconds,
                       webPush.sealMicroseconds / max(webPush.floorMicroseconds, 1e-3)))
        }
        if let retirement {
            row("history: retiring \(retirement.rows) finished rows", String(
                format: "migration to partitions %.1f s, WAL %@", retirement.migrationSeconds,
                megabytes(Int(retirement.migrationWALBytes))))
            for (name, result) in [("  by row deletes", retirement.rowDeletes), ("  by partition drops", retirement.partitionDrops)] {
                row(name, String(format: "%.2f s, WAL %@, claim p99 %.1f ms during (%.1f ms before), max %.1f ms",
                                 result.seconds, megabytes(Int(result.walBytes)), result.claimsDuring?.p99 ?? .nan,
                                 result.claimsBefore?.p99 ?? .nan, result.claimsDuring?.max ?? .nan))
            }
        }
        if !targets.isEmpty {
            lines.append("")
            lines.append("Targets:")
            for check in targets {
                lines.append("  " + (check.holds ? "holds " : "MISSED ")
                             + check.target.padding(toLength: 58, withPad: " ", startingAt: 0) + check.measured)
            }
        }
        return lines.joined(separator: "\n")
    }
}
