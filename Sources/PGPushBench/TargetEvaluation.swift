import Foundation

/// The performance targets (BENCHMARKS.md), checked against what was measured.
enum TargetEvaluation {
    static func evaluate(_ report: BenchReport) -> [TargetCheck] {
        var checks: [TargetCheck] = []
        for capped in report.capped {
            let floor = Double(capped.cap) * 0.99
            checks.append(TargetCheck(
                target: "capped, \(capped.connections) conn.: every connection ≥ 99% of \(capped.cap)/s",
                measured: String(format: "lowest %.1f/s", capped.lowestSteadyPerSecond),
                holds: !capped.perConnection.isEmpty && capped.lowestSteadyPerSecond >= floor))
            checks.append(TargetCheck(
                target: "capped, \(capped.connections) conn.: never > \(capped.cap) in any 1 s window",
                measured: "highest \(capped.highestInOneSecond)", holds: capped.highestInOneSecond <= capped.cap))
            if capped.connections == 50 {
                checks.append(TargetCheck(
                    target: "capped, 50 conn.: sustain 5,000/s (≥ 99%: 4,950/s)",
                    measured: String(format: "%.0f/s", capped.aggregatePerSecond), holds: capped.aggregatePerSecond >= 4950))
            }
        }
        if let uncapped = report.uncapped {
            checks.append(TargetCheck(target: "uncapped end to end ≥ 15,000/s",
                                      measured: String(format: "%.0f/s", uncapped.perSecond), holds: uncapped.perSecond >= 15_000))
            if let ratio = report.uncappedRatioOfLowerCeiling {
                var allBusy = ""
                if let rate = report.allCoresBusyRate, let lower = report.lowerCeiling {
                    allBusy = String(format: " (all CPUs busy: %.1f%%)", rate / lower * 100)
                }
                checks.append(TargetCheck(target: "uncapped ≥ 70% of the lower ceiling",
                                          measured: String(format: "%.1f%%", ratio * 100) + allBusy, holds: ratio >= 0.7))
            }
            checks.append(TargetCheck(target: "worker CPU ≤ 30 µs/notification",
                                      measured: String(format: "%.1f µs", uncapped.workerCPUMicrosecondsPerNotification),
                                      holds: uncapped.workerCPUMicrosecondsPerNotification <= 30))
        }
        if let latency = report.latency?.insertToRequest {
            let rate = report.latency?.offeredPerSecond ?? 0
            checks.append(TargetCheck(target: "latency p50 ≤ 5 ms at \(rate)/s (insert → request)",
                                      measured: String(format: "%.1f ms", latency.p50), holds: latency.p50 <= 5))
            checks.append(TargetCheck(target: "latency p99 ≤ 25 ms at \(rate)/s (insert → request)",
                                      measured: String(format: "%.1f ms", latency.p99), holds: latency.p99 <= 25))
        }
        if let memory = report.memory {
            let megabytes = Double(memory.worker.peakResidentBytes) / 1_048_576
            checks.append(TargetCheck(target: "worker memory ≤ 64 MB, backlog \(memory.rows) rows",
                                      measured: String(format: "%.1f MB", megabytes), holds: megabytes <= 64))
        }
        if let history = report.history, let without = history.withoutHistory, let with = history.withHistory {
            // "Does not grow": within half again (and 2 ms) of the time without history, through
            // the partial index of queued rows.
            checks.append(TargetCheck(
                target: "claim cost flat with \(history.finishedRows) finished rows",
                measured: String(format: "p50 %.1f → %.1f ms%@", without.p50, with.p50,
                                 history.usesQueuedIndex ? ", queued index" : ", no queued index"),
                holds: history.usesQueuedIndex && with.p50 <= without.p50 * 1.5 + 2))
        }
        return checks
    }
}
