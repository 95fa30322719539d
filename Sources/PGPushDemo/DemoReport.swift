import Foundation
import FCMSimulator
import WebPushSimulator
import PGPushOperator

/// The text `pgpush demo` prints after the run: what happened to every row, the
/// monitoring views, what the simulator saw, and the SQL to look for yourself.
package struct DemoReport: Sendable {
    package var result: DemoResult
    package var app: String
    /// How the reader reaches the database afterwards, e.g. `psql "$DATABASE_URL"`; nil when it is thrown away.
    package var psqlCommand: String?

    package init(result: DemoResult, app: String, psqlCommand: String?) {
        self.result = result
        self.app = app
        self.psqlCommand = psqlCommand
    }

    package func rendered() -> String {
        var sections = [summary(), byKind(), fates(), retried()]
        if let overtaking = result.overtaking {
            sections.append("== Lanes ==\n\nThe one-time code (lane urgent) was enqueued after a campaign of "
                            + "\(overtaking.campaignRows) rows (lane bulk) and sent before \(overtaking.sentAfterTheCode) of them: "
                            + "the claim takes urgent rows first, then normal, then bulk.")
        }
        if let snapshot = result.snapshot {
            sections.append("== Monitoring views (what `pgpush status --app \(app)` shows) ==\n\n" + snapshot.rendered())
        }
        if let channel = result.channel { sections.append(broadcastChannel(channel)) }
        sections += [simulator(), sql(), verdict()]
        return sections.joined(separator: "\n\n") + "\n"
    }

    /// `0123abcd…89ef (64)`: enough to tell tokens apart, with the length that matters.
    package static func shortToken(_ token: String) -> String {
        token.count <= 16 ? token : "\(token.prefix(8))…\(token.suffix(4)) (\(token.count))"
    }

    private func summary() -> String {
        let statuses = ["delivered", "failed", "expired", "cancelled", "queued", "sending"]
        var table = TextTable(headers: ["status", "rows"])
        for status in statuses {
            let count = result.rows.filter { $0.status == status }.count
            if count > 0 || ["delivered", "failed", "expired"].contains(status) { table.append([status, "\(count)"]) }
        }
        table.append(["total", "\(result.rows.count)"])
        let time = String(format: "%.1f", result.elapsedSeconds)
        return "== Demo finished in \(time) s: \(result.rows.count) notifications for app \"\(app)\" ==\n\n" + table.rendered()
    }

    private func byKind() -> String {
        var order: [String] = []
        var groups: [String: [DemoRow]] = [:]
        for row in result.rows {
            if groups[row.label] == nil { order.append(row.label) }
            groups[row.label, default: []].append(row)
        }
        var table = TextTable(headers: ["kind", "push type", "rows", "delivered", "failed", "expired", "retried", "as expected"])
        for label in order {
            let rows = groups[label] ?? []
            func count(_ status: String) -> String { "\(rows.filter { $0.status == status }.count)" }
            table.append([label, rows.first?.pushType ?? "", "\(rows.count)", count("delivered"), count("failed"), count("expired"),
                          "\(rows.filter { $0.attempts > 1 }.count)", rows.allSatisfy(\.meetsExpectation) ? "yes" : "NO"])
        }
        return "== By kind ==\n\n" + table.rendered()
    }

    /// At most `limit` rows, so a big run (--alerts 100000) keeps a readable report.
    private func rowTable(_ rows: [DemoRow], limit: Int = 25) -> String {
        var table = TextTable(headers: ["id", "token", "push type", "status", "attempts", "last_status", "last_reason", "kind"])
        for row in rows.prefix(limit) {
            table.append(["\(row.id)", Self.shortToken(row.token), row.pushType, row.status, "\(row.attempts)",
                          row.lastStatus.map(String.init) ?? "-", row.lastReason ?? "-", row.label])
        }
        return table.rendered() + (rows.count > limit ? "\n  … and \(rows.count - limit) more" : "")
    }

    private func fates() -> String {
        "== Rows not delivered, and why ==\n\n" + rowTable(result.rows.filter { $0.status != "delivered" })
    }

    private func retried() -> String {
        let rows = result.rows.filter { $0.status == "delivered" && $0.attempts > 1 }
        return "== Delivered after retries (503 and 429 answers are retried with backoff) ==\n\n" + rowTable(rows)
    }

    /// The demo's channel: created through the management API, two updates broadcast to it, deleted.
    private func broadcastChannel(_ channel: ChannelRecord) -> String {
        let broadcasts = result.simulator.broadcasts(toChannel: channel.channelID)
        let deleted = channel.deletedAt.map { "deleted at \(Date(timeIntervalSince1970: $0).formatted(.iso8601))" } ?? "NOT deleted"
        return """
            == Broadcast channel (Live Activities) ==

              \(channel.channelID): storage policy \(channel.messageStoragePolicy.map(String.init) ?? "unknown"), \
            \(broadcasts) broadcast request(s) to it, \(deleted)
              one request per update reaches every device whose activity subscribed to the channel
              (pgpush channels list|show --app \(app); SELECT * FROM pgpush.channels WHERE app = '\(app)';)
            """
    }

    private func simulator() -> String {
        let report = result.simulator
        var statuses = TextTable(headers: ["HTTP status", "answers"])
        for (status, count) in report.statusCounts.sorted(by: { $0.key < $1.key }) { statuses.append([status, "\(count)"]) }
        var reasons = TextTable(headers: ["reason", "answers"])
        for (reason, count) in report.reasonCounts.sorted(by: { $0.key < $1.key }) { reasons.append([reason, "\(count)"]) }
        var connections = TextTable(headers: ["connection", "requests", "most in one second"])
        for connection in report.connections { connections.append(["\(connection.id)", "\(connection.requests)", "\(connection.maxRequestsInOneSecond)"]) }
        return """
            == The APNs simulator saw ==

              requests received: \(report.totalRequests)   duplicates delivered: \(report.duplicateAcceptedAPNsIDs)
              most requests on one connection in any one second: \(report.maxRequestsPerConnectionPerSecond) \
            (limit \(result.ratePerConnection)/s per connection)

            \(statuses.rendered())

            \(reasons.rendered())

            \(connections.rendered())
            """ + fcmSimulator() + webPushSimulator()
    }

    private func webPushSimulator() -> String {
        guard let report = result.webPush else { return "" }
        var refusals = TextTable(headers: ["Web Push refusal", "answers"])
        for (reason, count) in report.refusals.sorted(by: { $0.key < $1.key }) { refusals.append([reason, "\(count)"]) }
        let read = report.deliveredPayloads.first.map { "\n  a browser read: \($0)" } ?? ""
        return """


            == The Web Push simulator saw ==

              push requests: \(report.requests)   delivered (VAPID checked, payload decrypted): \(report.delivered)\(read)
              (SELECT id, subscription ->> 'endpoint', status, message_id FROM pgpush.notifications WHERE service = 'webpush';)

            \(refusals.rendered())
            """
    }

    private func fcmSimulator() -> String {
        guard let report = result.fcm else { return "" }
        var errors = TextTable(headers: ["FCM error", "answers"])
        for (code, count) in report.errors.sorted(by: { $0.key < $1.key }) { errors.append([code, "\(count)"]) }
        return """


            == The FCM simulator saw ==

              access tokens requested: \(report.tokenRequests)   issued: \(report.tokensIssued) (one per app, shared by its connections)
              messages:send requests: \(report.sends)   delivered: \(report.delivered)
              (SELECT id, device_token, channel_id, status, message_id FROM pgpush.notifications WHERE service = 'fcm';)

            \(errors.rendered())
            """
    }

    private func sql() -> String {
        let where_ = "WHERE app = '\(app)'"
        let queries = """
              SELECT status, count(*) FROM pgpush.notifications \(where_) GROUP BY 1;
              SELECT id, device_token, status, attempts, last_status, last_reason
                FROM pgpush.notifications \(where_) AND status <> 'delivered';
              SELECT * FROM pgpush.delivery_errors \(where_) ORDER BY id;
              SELECT * FROM pgpush.queue_depth;      SELECT * FROM pgpush.throughput;
              SELECT * FROM pgpush.error_breakdown;  SELECT * FROM pgpush.worker_health;
              SELECT * FROM pgpush.app_health;       SELECT * FROM pgpush.invalid_tokens;
            """
        if let psqlCommand {
            return "== See it yourself (\(psqlCommand)) ==\n\n" + queries + "\n\n  or: pgpush status --app \(app)"
        }
        return "== See it yourself ==\n\nThis database was thrown away. Run the demo against your own with DATABASE_URL=… pgpush demo,\n"
            + "then:\n\n" + queries + "\n\n  or: pgpush status --app \(app)"
    }

    private func verdict() -> String {
        if result.interrupted { return "Demo interrupted before every row finished." }
        if result.snapshot == nil { return "Some rows did not finish in time: see the table above." }
        let unexpected = result.unexpected
        if unexpected.isEmpty { return "Every row ended as expected." }
        let lines = unexpected.map { row in
            "  \(row.id) (\(row.label)): \(row.status), \(row.attempts) attempts, \(row.lastReason ?? "-") — expected "
                + "\(row.expectation.status)\(row.expectation.attempts.map { ", \($0) attempts" } ?? "")"
                + "\(row.expectation.reason.map { ", \($0)" } ?? "")"
        }
        return "\(unexpected.count) row(s) did not end as expected:\n" + lines.joined(separator: "\n")
    }
}
