import Foundation

/// The pages as HTML, from what `StatusPages` read: pure functions of their input.
/// Values from rows and answers go through `HTML(text:)`; links carry them percent-encoded.
package enum PageRendering {
    package struct Context: Sendable {
        package var version: String
        /// Whether the POST forms are shown (`PGPUSH_WEB_TOKEN` is set).
        package var actionsEnabled: Bool
        /// A line for the top of the page (what an action just did), already chosen by the router.
        package var notice: String?

        package init(version: String, actionsEnabled: Bool, notice: String? = nil) {
            self.version = version
            self.actionsEnabled = actionsEnabled
            self.notice = notice
        }
    }

    /// Seconds the overview waits before reloading itself (`<meta http-equiv="refresh">`).
    package static let overviewRefreshSeconds = 10

    static func page(title: String, refresh: Int? = nil, context: Context, footer: HTML = "", _ body: HTML) -> HTML {
        var head: HTML = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        head += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        if let refresh { head += HTML.void("meta", ["http-equiv": "refresh", "content": String(refresh)]) }
        head += HTML.element("title", [:], HTML(text: title + " · pgpush"))
        head += "<link rel=\"stylesheet\" href=\"/style.css\"></head><body>"
        head += "<header><a class=\"brand\" href=\"/\">pgpush</a><nav><a href=\"/\">Overview</a><a href=\"/failures\">Failures</a></nav></header><main>"
        if let notice = context.notice { head += HTML.element("p", ["class": "notice", "role": "status"], HTML(text: notice)) }
        return head + HTML.element("h1", [:], HTML(text: title)) + body + "</main><footer>"
            + HTML(text: "pgpush \(context.version)") + footer + "</footer></body></html>\n"
    }

    // MARK: Overview

    package static func overview(_ overview: StatusPages.Overview, context: Context) -> HTML {
        var body: HTML = ""
        if overview.lines.isEmpty {
            body += "<p class=\"empty\">No notifications queued, and none finished in the last hour.</p>"
        } else {
            body += "<table class=\"overview\"><thead><tr><th>App</th><th>Service</th>"
            body += "<th class=\"n\">Urgent</th><th class=\"n\">Normal</th><th class=\"n\">Bulk</th><th class=\"n\">Scheduled</th>"
            body += "<th class=\"n\">Sending</th><th class=\"n\">Oldest due</th><th class=\"n\">Delivered</th><th class=\"n\">Failed</th>"
            body += "<th class=\"n\">Expired</th><th class=\"n\">Cancelled</th><th>Last hour, per minute</th></tr>"
            body += "<tr class=\"sub\"><th></th><th></th><th colspan=\"3\" class=\"n\">queued and due now, by lane</th><th></th><th></th><th></th>"
            body += "<th colspan=\"4\" class=\"n\">finished in the last hour</th><th></th></tr></thead><tbody>"
            for line in overview.lines {
                let failuresLink = "/failures?app=\(queryEncoded(line.app))&service=\(queryEncoded(line.service))"
                body += HTML.element("tr", ["data-app": line.app, "data-service": line.service],
                    HTML.element("td", [:], HTML(text: line.app, limit: 200))
                    + HTML.element("td", [:], HTML(text: line.service))
                    + cell(line.due[0], "due-urgent") + cell(line.due[1], "due-normal") + cell(line.due[2], "due-bulk")
                    + cell(line.scheduled, "scheduled", atLeast: line.scheduledCapped) + cell(line.sending, "sending")
                    + HTML.element("td", ["class": "n", "data-field": "oldest-due"], HTML(text: line.oldestDueSeconds.map(age) ?? "–"))
                    + cell(line.delivered, "delivered")
                    + HTML.element("td", ["class": line.failed > 0 ? "n bad" : "n", "data-field": "failed"],
                                   line.failed > 0 ? HTML.element("a", ["href": failuresLink], HTML(count: line.failed)) : HTML(count: 0))
                    + cell(line.expired, "expired") + cell(line.cancelled, "cancelled")
                    + HTML.element("td", [:], ThroughputChart.svg(delivered: line.deliveredPerMinute, failed: line.failedPerMinute,
                                                                  label: "\(line.app) \(line.service)")))
            }
            body += "</tbody></table>"
            body += "<p class=\"legend\"><span class=\"key ok\"></span> delivered <span class=\"key bad\"></span> failed or expired,"
            body += " per minute, the oldest minute on the left. Queued rows are counted exactly up to "
            body += HTML(count: StatusPages.countCap) + " per lane.</p>"
        }

        body += "<h2>App health</h2>"
        if let health = overview.health {
            let flagged = health.filter { !$0.healthy }
            if flagged.isEmpty {
                body += "<p class=\"empty\">Every app's sending is healthy.</p>"
            } else {
                body += "<table><thead><tr><th>App</th><th>Service</th><th>Topic</th><th>Reason</th><th>Since</th></tr></thead><tbody>"
                for entry in flagged {
                    body += HTML.element("tr", ["class": "unhealthy"],
                        HTML.element("td", [:], HTML(text: entry.app, limit: 200)) + HTML.element("td", [:], HTML(text: entry.service))
                        + HTML.element("td", [:], HTML(text: entry.topic ?? "all topics", limit: 200))
                        + HTML.element("td", [:], HTML(text: entry.reason ?? "", limit: StatusPages.reasonShown))
                        + HTML.element("td", [:], HTML(text: entry.since)))
                }
                body += "</tbody></table>"
            }
        } else {
            body += "<p class=\"empty\">This database role may not read pgpush.app_health.</p>"
        }

        body += "<h2>Live workers</h2>"
        if let workers = overview.workers {
            if workers.isEmpty {
                body += "<p class=\"empty bad\">No worker has sent a heartbeat in the last 30 seconds.</p>"
            } else {
                body += "<table><thead><tr><th>Worker</th><th>Host</th><th class=\"n\">PID</th><th>Version</th>"
                body += "<th class=\"n\">Heartbeat</th><th class=\"n\">Sent</th><th class=\"n\">Delivered</th><th class=\"n\">Failed</th></tr></thead><tbody>"
                for worker in workers {
                    body += HTML.element("tr", [:],
                        HTML.element("td", [:], HTML(text: worker.id, limit: 200)) + HTML.element("td", [:], HTML(text: worker.host, limit: 200))
                        + HTML.element("td", ["class": "n"], HTML(text: String(worker.pid)))
                        + HTML.element("td", [:], HTML(text: worker.version, limit: 100))
                        + HTML.element("td", ["class": "n"], HTML(text: age(worker.secondsSinceHeartbeat) + " ago"))
                        + HTML.element("td", ["class": "n"], HTML(count: worker.sent))
                        + HTML.element("td", ["class": "n"], HTML(count: worker.delivered))
                        + HTML.element("td", ["class": "n"], HTML(count: worker.failed)))
                }
                body += "</tbody></table>"
            }
        } else {
            body += "<p class=\"empty\">This database role may not read pgpush.worker_health.</p>"
        }
        return page(title: "Overview", refresh: overviewRefreshSeconds, context: context,
                    footer: HTML(text: " · read at \(overview.readAt) as database role \(overview.role) · refreshes every \(overviewRefreshSeconds) s"),
                    body)
    }

    /// A count; past `StatusPages.countCap` (or marked `atLeast`) it reads "10,000+".
    private static func cell(_ count: Int, _ field: String, atLeast: Bool = false) -> HTML {
        let capped = atLeast || count > StatusPages.countCap
        return HTML.element("td", ["class": count == 0 ? "n zero" : "n", "data-field": field],
                            HTML(count: min(count, capped && !atLeast ? StatusPages.countCap : count)) + (capped ? "+" : ""))
    }

    /// 42 s, 7 min, 3 h 5 min, 2 d 4 h.
    package static func age(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.down))
        switch whole {
        case ..<120: return "\(max(whole, 0)) s"
        case ..<7200: return "\(whole / 60) min"
        case ..<172_800: return "\(whole / 3600) h \(whole % 3600 / 60) min"
        default: return "\(whole / 86400) d \(whole % 86400 / 3600) h"
        }
    }

    // MARK: Failures

    package static func failures(_ failures: [StatusPages.Failure], filter: StatusPages.Filter, context: Context) -> HTML {
        var body: HTML = "<form class=\"filter\" method=\"get\" action=\"/failures\">"
        body += "<label>App " + HTML.void("input", ["name": "app", "value": filter.app ?? ""]) + "</label>"
        body += "<label>Service " + HTML.void("input", ["name": "service", "value": filter.service ?? ""]) + "</label>"
        body += "<label>Reason " + HTML.void("input", ["name": "reason", "value": filter.reason ?? ""]) + "</label>"
        body += "<button type=\"submit\">Filter</button> <a href=\"/failures\">clear</a></form>"
        body += HTML.element("p", ["class": "legend"], HTML(text:
            "Failed and expired notifications of the last \(StatusPages.failuresWindowDays) days, newest first (at most \(StatusPages.failuresShown))."))
        guard !failures.isEmpty else {
            return page(title: "Failures", context: context, body + "<p class=\"empty\">None.</p>")
        }
        var table: HTML = "<table class=\"failures\"><thead><tr>"
        if context.actionsEnabled { table += "<th></th>" }
        table += "<th class=\"n\">Id</th><th>App</th><th>Service</th><th>Lane</th><th>Status</th><th class=\"n\">Attempts</th>"
        table += "<th class=\"n\">HTTP</th><th>Reason</th><th>Finished</th></tr></thead><tbody>"
        for failure in failures {
            var row: HTML = ""
            if context.actionsEnabled {
                row += HTML.element("td", [:], HTML.void("input", ["type": "checkbox", "name": "id", "value": String(failure.id),
                                                                    "aria-label": "select \(failure.id)"]))
            }
            let reasonLink = "/failures?reason=\(queryEncoded(failure.reason ?? ""))"
            row += HTML.element("td", ["class": "n"], HTML.element("a", ["href": "/notifications/\(failure.id)"], HTML(text: String(failure.id))))
                + HTML.element("td", [:], HTML(text: failure.app, limit: 200)) + HTML.element("td", [:], HTML(text: failure.service))
                + HTML.element("td", [:], HTML(text: failure.lane)) + HTML.element("td", [:], HTML(text: failure.status))
                + HTML.element("td", ["class": "n"], HTML(count: failure.attempts))
                + HTML.element("td", ["class": "n"], HTML(text: failure.httpStatus.map(String.init) ?? "–"))
                + HTML.element("td", ["class": "reason"],
                               failure.reasonLength <= StatusPages.reasonShown && failure.reason != nil
                                   ? HTML.element("a", ["href": reasonLink], HTML(text: failure.reason ?? ""))
                                   : HTML(text: failure.reason ?? "", limit: StatusPages.reasonShown, length: failure.reasonLength))
                + HTML.element("td", [:], HTML(text: failure.finishedAt))
            table += HTML.element("tr", ["data-id": String(failure.id)], row)
        }
        table += "</tbody></table>"
        if context.actionsEnabled {
            var back = "/failures"
            let filters = [("app", filter.app), ("service", filter.service), ("reason", filter.reason)].compactMap { name, value in
                value.map { "\(name)=\(queryEncoded($0))" }
            }
            if !filters.isEmpty { back += "?" + filters.joined(separator: "&") }
            body += "<form method=\"post\" action=\"/requeue\">" + HTML.void("input", ["type": "hidden", "name": "back", "value": back]) + table
            body += "<p class=\"action\"><label>Token " + HTML.void("input", ["type": "password", "name": "token", "autocomplete": "current-password"])
            body += "</label> <button type=\"submit\" name=\"action\" value=\"requeue\">Requeue selected</button></p></form>"
        } else {
            body += table
            body += "<p class=\"legend\">Requeueing from this page is off: start pgpush web with PGPUSH_WEB_TOKEN set.</p>"
        }
        return page(title: "Failures", context: context, body)
    }

    // MARK: One notification

    package static func notification(_ detail: StatusPages.Detail, context: Context) -> HTML {
        let id = detail.fields.first { $0.name == "id" }?.value ?? ""
        var body: HTML = "<table class=\"fields\"><tbody>"
        for field in detail.fields {
            body += HTML.element("tr", ["data-field": field.name],
                                 HTML.element("th", [:], HTML(text: field.name)) + HTML.element("td", [:], HTML(text: field.value ?? "–", limit: 500)))
        }
        body += HTML.element("tr", ["data-field": "last_reason"], HTML.element("th", [:], "last_reason")
            + HTML.element("td", ["class": "reason"], HTML(text: detail.reason ?? "–", limit: StatusPages.detailShown, length: detail.reasonLength)))
        body += "</tbody></table><p class=\"legend\">The payload and the device token or subscription are never shown here.</p>"
        if context.actionsEnabled && detail.status == "queued" {
            body += "<form method=\"post\" action=\"/cancel\">" + HTML.void("input", ["type": "hidden", "name": "id", "value": id])
                + HTML.void("input", ["type": "hidden", "name": "back", "value": "/notifications/\(id)"])
            body += "<label>Token " + HTML.void("input", ["type": "password", "name": "token", "autocomplete": "current-password"])
            body += "</label> <button type=\"submit\">Cancel this notification</button></form>"
        }
        if context.actionsEnabled && (detail.status == "failed" || detail.status == "expired") {
            body += "<form method=\"post\" action=\"/requeue\">" + HTML.void("input", ["type": "hidden", "name": "id", "value": id])
                + HTML.void("input", ["type": "hidden", "name": "back", "value": "/notifications/\(id)"])
            body += "<label>Token " + HTML.void("input", ["type": "password", "name": "token", "autocomplete": "current-password"])
            body += "</label> <button type=\"submit\">Requeue this notification</button></form>"
        }
        body += "<h2>Delivery errors</h2>"
        if detail.errors.isEmpty {
            body += "<p class=\"empty\">None recorded.</p>"
        } else {
            body += "<table class=\"errors\"><thead><tr><th class=\"n\">Attempt</th><th class=\"n\">HTTP</th><th>Reason</th><th>Detail</th>"
            body += "<th>Worker</th><th>At</th></tr></thead><tbody>"
            for error in detail.errors {
                body += HTML.element("tr", [:],
                    HTML.element("td", ["class": "n"], HTML(count: error.attempt))
                    + HTML.element("td", ["class": "n"], HTML(text: error.httpStatus.map(String.init) ?? "–"))
                    + HTML.element("td", ["class": "reason"], HTML(text: error.reason, limit: StatusPages.reasonShown, length: error.reasonLength))
                    + HTML.element("td", ["class": "reason"], HTML(text: error.detail ?? "", limit: StatusPages.detailShown, length: error.detailLength))
                    + HTML.element("td", [:], HTML(text: error.workerID ?? "–", limit: 200)) + HTML.element("td", [:], HTML(text: error.at)))
            }
            body += "</tbody></table>"
        }
        return page(title: "Notification \(id)", context: context, body)
    }

    /// A page that says why there is nothing to show (404, 403, a database error).
    package static func message(title: String, _ text: String, context: Context) -> HTML {
        page(title: title, context: context, HTML.element("p", ["class": "message"], HTML(text: text, limit: 1_000)))
    }

    package static let styleSheet = """
        :root { color-scheme: light dark; --ok: #2e7d32; --bad: #c62828; --line: #8884; }
        body { font: 14px/1.4 system-ui, sans-serif; margin: 0; }
        header { display: flex; gap: 2em; align-items: baseline; padding: .6em 1.2em; border-bottom: 1px solid var(--line); }
        header .brand { font-weight: 700; font-size: 1.2em; text-decoration: none; color: inherit; }
        nav a { margin-right: 1.2em; }
        main { padding: 0 1.2em 1em; }
        footer { padding: .6em 1.2em; color: #888; border-top: 1px solid var(--line); }
        h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
        table { border-collapse: collapse; }
        th, td { padding: .25em .6em; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
        .n { text-align: right; font-variant-numeric: tabular-nums; }
        tr.sub th { font-weight: 400; color: #888; font-size: .85em; }
        .zero { color: #999; } .bad, .bad a { color: var(--bad); } .unhealthy td { color: var(--bad); }
        .reason { max-width: 40em; overflow-wrap: anywhere; white-space: pre-wrap; }
        .cut { color: #888; } .empty { color: #888; }
        .notice { padding: .5em .8em; border-left: 4px solid var(--ok); background: #2e7d3214; }
        .legend { color: #888; font-size: .9em; }
        .key { display: inline-block; width: .8em; height: .8em; } .key.ok { background: var(--ok); } .key.bad { background: var(--bad); }
        svg.chart { display: block; } svg.chart .ok { fill: var(--ok); } svg.chart .bad { fill: var(--bad); }
        form.filter label { margin-right: 1em; } form.filter input { width: 10em; }
        .action { margin-top: 1em; }
        """
}

extension HTML {
    /// A value of which only the first `limit` characters were read (`left(…)` in SQL), with
    /// its whole length, so the page says how much was left out.
    init(text: String, limit: Int, length: Int) {
        self = HTML(text: text, limit: limit)
        if length > limit && text.unicodeScalars.count <= limit {
            self += HTML.drawn("<span class=\"cut\">… (\(length) characters)</span>")
        }
    }
}
