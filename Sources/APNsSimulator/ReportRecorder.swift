import Foundation

/// Accumulates a `SimulatorReport`; owned by the simulator's state, under its lock.
struct ReportRecorder {
    private var report = SimulatorReport()
    /// Keyed by the 16-byte UUID, not its text: a benchmark sees millions of ids.
    private var seenAPNsIDs: [UUID: Int] = [:]
    private var acceptedAPNsIDs: [UUID: Int] = [:]

    mutating func received() { report.totalRequests += 1 }
    var totalRequests: Int { report.totalRequests }

    mutating func answered(_ answer: SimulatorAnswer, apnsID: String?) {
        report.statusCounts[String(answer.status), default: 0] += 1
        if let reason = answer.reason { report.reasonCounts[reason, default: 0] += 1 }
        if answer.status == 200, let apnsID { Self.note(apnsID, in: &acceptedAPNsIDs, counter: &report.duplicateAcceptedAPNsIDs) }
    }

    /// A request that may have been processed (answered or lost with its connection).
    mutating func processed(apnsID: String?) {
        if let apnsID { Self.note(apnsID, in: &seenAPNsIDs, counter: &report.duplicateAPNsIDs) }
    }

    mutating func refused() { report.refusedStreams += 1 }
    mutating func unanswered() { report.unansweredRequests += 1 }
    mutating func connectionOpened() { report.connectionsOpened += 1 }

    mutating func goAwaySent(reason: String) {
        report.goAwaysSent += 1
        report.goAwayReasons[reason, default: 0] += 1
    }
    mutating func connectionDropped() { report.connectionsDropped += 1 }
    mutating func broadcast(toChannel channelID: String) { report.broadcastsByChannel[channelID, default: 0] += 1 }
    mutating func managementRequest() { report.managementRequests += 1 }

    func snapshot(connections: [ConnectionReport]) -> SimulatorReport {
        var result = report
        result.connections = connections.sorted { $0.id < $1.id }
        result.maxRequestsPerConnectionPerSecond = connections.map(\.maxRequestsInOneSecond).max() ?? 0
        return result
    }

    /// Counts an id the second time it is seen, and only then. Malformed ids were
    /// answered BadMessageId and cannot be duplicates of anything delivered.
    private static func note(_ id: String, in seen: inout [UUID: Int], counter: inout Int) {
        guard let key = UUID(uuidString: id) else { return }
        let previous = seen[key, default: 0]
        seen[key] = previous + 1
        if previous == 1 { counter += 1 }
    }
}
