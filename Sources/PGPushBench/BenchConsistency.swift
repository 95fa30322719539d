/// What must hold in any run, however slow the machine: every row accounted for, nothing
/// sent twice without faults, no window over the cap at the simulator. `pgpush bench
/// --check` fails on these (CI runs it with `--quick`); speed is never judged here.
public enum BenchConsistency {
    public static func problems(_ report: BenchReport) -> [String] {
        var problems: [String] = []
        func expect(_ condition: Bool, _ problem: @autoclosure () -> String) {
            if !condition { problems.append(problem()) }
        }
        if let ceiling = report.databaseCeiling {
            expect(ceiling.perSecond > 0, "database ceiling: no rows written")
        }
        if let transport = report.transportCeiling {
            expect(transport.delivered == transport.requests,
                   "transport ceiling: \(transport.delivered) of \(transport.requests) requests answered 200")
        }
        if let uncapped = report.uncapped {
            expect(uncapped.finished == uncapped.rows, "uncapped: \(uncapped.finished) of \(uncapped.rows) rows finished")
            expect(uncapped.statuses == ["delivered": uncapped.rows], "uncapped: final statuses \(uncapped.statuses)")
            expect(uncapped.simulatorRequests == uncapped.rows,
                   "uncapped: the simulator saw \(uncapped.simulatorRequests) requests for \(uncapped.rows) rows")
            expect(uncapped.duplicateAcceptedAPNsIDs == 0, "uncapped: \(uncapped.duplicateAcceptedAPNsIDs) duplicates")
        }
        for capped in report.capped {
            expect(capped.perConnection.count == capped.connections,
                   "capped \(capped.connections): \(capped.perConnection.count) connections sent requests")
            expect(capped.highestInOneSecond <= capped.cap,
                   "capped \(capped.connections): \(capped.highestInOneSecond) requests in one second on one connection, cap \(capped.cap)")
        }
        if let latency = report.latency {
            expect(latency.insertToRequest?.count == latency.rows,
                   "latency: \(latency.insertToRequest?.count ?? 0) of \(latency.rows) rows seen at the simulator")
        }
        if let faults = report.faults {
            let ended = faults.statuses.filter { ["delivered", "failed"].contains($0.key) }.values.reduce(0, +)
            expect(ended == faults.rows, "faults: \(ended) of \(faults.rows) rows ended delivered or failed: \(faults.statuses)")
            expect(faults.duplicateAcceptedAPNsIDs == 0, "faults: \(faults.duplicateAcceptedAPNsIDs) notifications accepted twice")
        }
        if let memory = report.memory {
            expect(memory.simulatorRequests > 0, "memory: the worker sent nothing")
        }
        if let history = report.history {
            expect(history.usesQueuedIndex, "history: the claim plan does not use notifications_queued_due")
            expect(history.withHistory != nil, "history: no claims timed with the history in place")
        }
        return problems
    }
}
