import Foundation

/// The human form of a `StatusSnapshot`: one small table per section.
extension StatusSnapshot {
    package func rendered() -> String {
        var sections: [String] = []
        let scope = app.map { "app \(TerminalText.escaped($0))" } ?? "all apps"
        sections.append("pgpush status — \(scope), \(takenAt)\n" + headline())

        var depth = TextTable(headers: ["app", "due", "scheduled", "sending", "oldest due"])
        for row in queue {
            depth.append([row.app, "\(row.due)", "\(row.scheduled)", "\(row.sending)", Self.age(row.oldestDueSeconds)])
        }
        sections.append("Queue (pgpush.queue_depth)\n" + depth.rendered())

        var minutes = TextTable(headers: ["minute (UTC)", "app", "delivered", "failed", "expired", "cancelled"])
        for row in throughput {
            minutes.append([String(row.minute.dropFirst(11).prefix(5)), row.app, "\(row.delivered)", "\(row.failed)",
                            "\(row.expired)", "\(row.cancelled)"])
        }
        sections.append("Finished per minute, last 10 minutes (pgpush.throughput)\n" + minutes.rendered())

        var failures = TextTable(headers: ["app", "status", "reason", "errors", "last seen (UTC)"])
        for row in errors {
            failures.append([row.app, row.status.map(String.init) ?? "-", row.reason, "\(row.errors)", row.lastSeen])
        }
        sections.append("Errors, last 24 hours (pgpush.error_breakdown)\n" + failures.rendered())

        var invalid = TextTable(headers: ["app", "invalid tokens"])
        for row in invalidTokens { invalid.append([row.app, "\(row.tokens)"]) }
        sections.append("Invalid tokens (pgpush.invalid_tokens)\n" + invalid.rendered())

        var workerTable = TextTable(headers: ["worker", "alive", "heartbeat", "apps", "conns", "sent", "delivered", "failed", "retried"])
        for row in workers {
            workerTable.append([row.id, row.alive ? "yes" : "NO", Self.age(row.secondsSinceHeartbeat) + " ago",
                                row.apps.joined(separator: ","), "\(row.connections)", "\(row.sent)", "\(row.delivered)",
                                "\(row.failed)", "\(row.retried)"])
        }
        sections.append("Workers (pgpush.worker_health)\n" + workerTable.rendered())

        var appTable = TextTable(headers: ["app", "service", "topic", "healthy", "reason", "since (UTC)", "seen by"])
        for row in apps {
            appTable.append([row.app, row.service, row.topic ?? "(all)", row.healthy ? "yes" : "NO", row.reason ?? "", row.since,
                             row.workerID ?? ""])
        }
        sections.append("Apps (pgpush.app_health)\n" + appTable.rendered())
        if !unservedApps.isEmpty {
            var unservedTable = TextTable(headers: ["app", "service", "due", "oldest due"])
            for row in unservedApps {
                unservedTable.append([row.app, row.service, "\(row.due)", Self.age(row.oldestDueSeconds)])
            }
            sections.append("Apps and services no live worker sends for (none runs, or none has credentials for the "
                            + "service): their rows wait (pgpush.unserved_apps)\n" + unservedTable.rendered())
        }
        return sections.joined(separator: "\n\n")
    }

    /// One line for a glance: backlog, workers, apps in trouble.
    func headline() -> String {
        let due = queue.reduce(0) { $0 + $1.due }, scheduled = queue.reduce(0) { $0 + $1.scheduled }
        let sending = queue.reduce(0) { $0 + $1.sending }
        var line = "  \(due) due (oldest \(Self.age(oldestDueSeconds))), \(scheduled) scheduled, \(sending) sending"
        let alive = workers.filter(\.alive).count
        line += " · workers: \(alive) alive" + (workers.count > alive ? ", \(workers.count - alive) silent" : "")
        let unhealthy = apps.filter { !$0.healthy }
        line += unhealthy.isEmpty ? " · apps: all healthy"
            : " · unhealthy: " + unhealthy.map { TerminalText.escaped("\($0.app) (\($0.reason ?? "?"))") }.joined(separator: ", ")
        if !unservedApps.isEmpty {
            line += " · not served: " + unservedApps.map { TerminalText.escaped("\($0.app) (\($0.due) due)") }.joined(separator: ", ")
        }
        return line
    }

    /// `0.4s`, `12s`, `3m05s`, `2h10m`.
    static func age(_ seconds: Double) -> String {
        if seconds < 10 { return String(format: "%.1fs", seconds) }
        let whole = Int(seconds.rounded())
        if whole < 60 { return "\(whole)s" }
        if whole < 3600 { return String(format: "%dm%02ds", whole / 60, whole % 60) }
        return String(format: "%dh%02dm", whole / 3600, whole % 3600 / 60)
    }
}
