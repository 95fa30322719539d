import APNsClient
import Foundation
import Locking
import PGPushCore
import PushQueue
import PushTransport

/// What the worker counts for Prometheus: outcomes by app, service and reason, send
/// latency, queue depth as last seen, app, service and topic health. Written from many
/// tasks; read per scrape.
///
/// Every label value comes from a bounded set, so that no tenant-made string can
/// grow the number of series without limit: apps are the configured ones (the queue
/// gauges sum every other app under "other"), reasons
/// are the ones APNs documents or pgpush itself writes (others count as "other"),
/// and topics are capped per app.
final class WorkerMetrics: Sendable {
    /// Upper bounds of the latency histogram, in seconds.
    static let latencyBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct OutcomeKey: Hashable {
        var app: String
        /// "" for the figures the database counts without a service (`recordFinishedInDatabase`).
        var service: String = ""
        var outcome: String
        var reason: String
    }

    struct HealthKey: Hashable {
        var app: String
        var service: String
        /// "" for the whole app's sending to the service.
        var topic: String
    }

    /// Distinct topic labels kept per app; further topics share the label "other".
    /// Topics come from rows (apns-topic), so without a cap a tenant could make one
    /// series per row.
    static let topicsPerApp = 16

    /// Reasons that are label values as they are, whatever the service: the causes of a
    /// request without an answer (as the `last_reason` column spells them) and the claim's
    /// own. Each sender adds the reasons its service documents (`NotificationSender.reasons`).
    static let sharedReasons: Set<String> = {
        var reasons: Set<String> = ["", "KnownInvalidToken", "OutcomeRefused"]
        reasons.formUnion(DeliveryFailure.Cause.allCases.map { $0.rawValue.prefix(1).uppercased() + $0.rawValue.dropFirst() })
        return reasons
    }()

    /// The label value for a reason: itself when known, `HTTPnnn` for an answer
    /// without a reason, "other" for anything else (an undocumented string, a GOAWAY's
    /// debug data).
    func reasonLabel(_ reason: String?) -> String {
        let reason = reason ?? ""
        if knownReasons.contains(reason) { return reason }
        if reason.count == 7, reason.hasPrefix("HTTP"), reason.dropFirst(4).allSatisfy(\.isASCII), Int(reason.dropFirst(4)) != nil {
            return reason
        }
        return "other"
    }

    private struct State {
        var outcomes: [OutcomeKey: Int] = [:]
        var health: [HealthKey: Bool] = [:]
        /// Per app, the paused topics past the cap: "other" reads 0 while any is paused.
        var pausedOverflowTopics: [String: Set<String>] = [:]
        var latencyCounts = [Int](repeating: 0, count: WorkerMetrics.latencyBuckets.count + 1)
        var latencySum = 0.0
        var queueDepth: [String: QueueDepth] = [:]
        /// When the queue figures (`queueDepth`, `unserved`) were last read; nil until the
        /// first read succeeds, and until then the queue gauges are absent, never 0.
        var queueReadAt: ContinuousClock.Instant?
        /// Due rows of apps no live worker serves, and how many such apps (pgpush.unserved_apps).
        var unserved = (due: 0, apps: 0)
        /// Per app and status (expired, cancelled): rows the database saw finish.
        var finishedInDatabase: [OutcomeKey: Int] = [:]
        var lastDatabaseContact: ContinuousClock.Instant?
        /// Per route with rate_per_app, this worker's share (requests/s) as last granted.
        var rateShares: [HealthKey: Int] = [:]
    }

    private let state: Locked<State>
    private let knownReasons: Set<String>
    /// The apps this worker serves: their health series exist from the start, healthy,
    /// and their queue series from the first queue read on, at zero when the view has no
    /// row for them, so that an empty queue reads 0 rather than vanishing (and an alert on
    /// it does not go quiet for lack of data). Before that read they are absent: 0 would
    /// claim an empty queue nobody has seen (a queue query that always times out read 0
    /// with 19,999 rows due).
    private let apps: [String]

    /// `services`: the services each app is served for; `reasons`: the reasons the senders'
    /// services give, label values as they are.
    init(apps: [String], services: [String: [Service]] = [:], reasons: Set<String> = []) {
        self.apps = apps.sorted()
        knownReasons = Self.sharedReasons.union(reasons)
        var initial = State()
        for app in apps {
            for service in services[app] ?? [.apns] {
                initial.health[HealthKey(app: app, service: service.rawValue, topic: "")] = true
            }
        }
        state = Locked(initial)
    }

    func recordOutcome(app: String, service: Service = .apns, _ outcome: Outcome) {
        let name: String
        switch outcome.disposition {
        case .delivered: name = "delivered"
        case .failed: name = "failed"
        case .expired: name = "expired"
        case .retry(_, let counts): name = counts ? "retried" : "requeued"
        }
        let key = OutcomeKey(app: app, service: service.rawValue, outcome: name, reason: reasonLabel(outcome.reason))
        state.withLock { $0.outcomes[key, default: 0] += 1 }
    }

    /// Rows the claim finished as `KnownInvalidToken`, counted like failed outcomes with that reason.
    func recordKnownInvalid(app: String, service: Service = .apns, count: Int) {
        let key = OutcomeKey(app: app, service: service.rawValue, outcome: "failed", reason: "KnownInvalidToken")
        state.withLock { $0.outcomes[key, default: 0] += count }
    }

    /// Rows the claim found past their expiration and finished as `expired` without a request.
    func recordExpiredAtClaim(app: String, service: Service = .apns, count: Int) {
        let key = OutcomeKey(app: app, service: service.rawValue, outcome: "expired", reason: "")
        state.withLock { $0.outcomes[key, default: 0] += count }
    }

    /// What the worker wrote to `app_health`: the app's sending to a service (topic nil) or
    /// one topic paused or healthy.
    func recordHealth(app: String, service: Service = .apns, topic: String?, healthy: Bool) {
        state.withLock { state in
            let key = HealthKey(app: app, service: service.rawValue, topic: topic ?? "")
            let isOverflow = state.health[key] == nil && !key.topic.isEmpty
                && state.health.keys.count(where: { $0.app == app && !$0.topic.isEmpty && $0.topic != "other" }) >= Self.topicsPerApp
            guard isOverflow, let topic else {
                state.health[key] = healthy
                return
            }
            if healthy {
                state.pausedOverflowTopics[app]?.remove(topic)
            } else {
                state.pausedOverflowTopics[app, default: []].insert(topic)
            }
            state.health[HealthKey(app: app, service: service.rawValue, topic: "other")] = state.pausedOverflowTopics[app]?.isEmpty ?? true
        }
    }

    func recordRateShare(app: String, service: Service, share: Int) {
        state.withLock { $0.rateShares[HealthKey(app: app, service: service.rawValue, topic: "")] = share }
    }

    func recordLatency(_ duration: Duration) {
        let seconds = Self.seconds(duration)
        let bucket = Self.latencyBuckets.firstIndex { seconds <= $0 } ?? Self.latencyBuckets.count
        state.withLock { state in
            state.latencyCounts[bucket] += 1
            state.latencySum += seconds
        }
    }

    func recordQueueDepth(_ depth: [String: QueueDepth], unserved: (due: Int, apps: Int)) {
        state.withLock { state in
            state.queueDepth = depth
            state.unserved = unserved
            state.queueReadAt = .now
            state.lastDatabaseContact = .now
        }
    }

    /// What the heartbeat counted in the database since the previous one: rows
    /// cancelled by applications and rows other workers found expired.
    func recordFinishedInDatabase(_ counts: [String: [String: Int]]) {
        state.withLock { state in
            for (app, statuses) in counts {
                for (status, count) in statuses where Self.databaseStatuses.contains(status) {
                    state.finishedInDatabase[OutcomeKey(app: app, outcome: status, reason: ""), default: 0] += count
                }
            }
        }
    }

    /// The statuses `pgpush_queue_finished_total` counts: rows that end without a send.
    static let databaseStatuses = ["cancelled", "expired"]

    func recordDatabaseContact() {
        state.withLock { $0.lastDatabaseContact = .now }
    }

    /// Ready: the database answered within `window`.
    func isReady(window: Duration) -> Bool {
        state.withLock { state in state.lastDatabaseContact.map { ContinuousClock.now - $0 < window } ?? false }
    }

    /// Prometheus text format (version 0.0.4).
    /// `senders`: per app and service, its senders' figures (`SenderStatistics`).
    func render(senders: [Route: SenderStatistics] = [:]) -> String {
        let snapshot = state.withLock { $0 }
        var text = ""
        text += "# HELP pgpush_notifications_total Notifications finished or rescheduled by this worker, by app, service, "
            + "outcome and reason.\n"
        text += "# TYPE pgpush_notifications_total counter\n"
        for (key, count) in snapshot.outcomes.sorted(by: {
            ($0.key.app, $0.key.service, $0.key.outcome, $0.key.reason) < ($1.key.app, $1.key.service, $1.key.outcome, $1.key.reason)
        }) {
            text += "pgpush_notifications_total{app=\(Self.label(key.app)),service=\(Self.label(key.service)),"
                + "outcome=\(Self.label(key.outcome)),reason=\(Self.label(key.reason))} \(count)\n"
        }
        text += "# HELP pgpush_send_latency_seconds From handing a request to the service's sender to its result.\n"
        text += "# TYPE pgpush_send_latency_seconds histogram\n"
        var cumulative = 0
        for (index, bound) in Self.latencyBuckets.enumerated() {
            cumulative += snapshot.latencyCounts[index]
            text += "pgpush_send_latency_seconds_bucket{le=\"\(bound)\"} \(cumulative)\n"
        }
        cumulative += snapshot.latencyCounts[Self.latencyBuckets.count]
        text += "pgpush_send_latency_seconds_bucket{le=\"+Inf\"} \(cumulative)\n"
        text += "pgpush_send_latency_seconds_sum \(snapshot.latencySum)\n"
        text += "pgpush_send_latency_seconds_count \(cumulative)\n"
        // Served apps at zero when the view has no row for them (an empty queue). The
        // view also lists apps this worker does not serve, named by whoever inserted
        // the rows: those are summed under app="other" (oldest row: the oldest of them).
        var queueByApp = Dictionary(uniqueKeysWithValues: apps.map { ($0, Self.emptyQueue) })
        for (app, depth) in snapshot.queueDepth {
            let label = queueByApp[app] == nil || app == Self.unservedApps ? Self.unservedApps : app
            var figures = label == app ? Self.emptyQueue : queueByApp[label] ?? Self.emptyQueue
            figures.due += depth.due
            figures.sending += depth.sending
            figures.oldestDueSeconds = max(figures.oldestDueSeconds, depth.oldestDueSeconds)
            queueByApp[label] = figures
        }
        let queue = snapshot.queueReadAt == nil ? [] : queueByApp.sorted(by: { $0.key < $1.key })
        text += "# HELP pgpush_queue_depth_age_seconds Seconds since the queue gauges were read (each heartbeat); "
            + "they and this are absent until the first read succeeds.\n# TYPE pgpush_queue_depth_age_seconds gauge\n"
        if let readAt = snapshot.queueReadAt {
            text += "pgpush_queue_depth_age_seconds \(Self.seconds(ContinuousClock.now - readAt))\n"
        }
        text += "# HELP pgpush_queue_due Rows due now, per app (as of the last heartbeat).\n# TYPE pgpush_queue_due gauge\n"
        for (app, depth) in queue {
            text += "pgpush_queue_due{app=\(Self.label(app))} \(depth.due)\n"
        }
        text += "# HELP pgpush_queue_sending Rows being sent by any worker, per app.\n# TYPE pgpush_queue_sending gauge\n"
        for (app, depth) in queue {
            text += "pgpush_queue_sending{app=\(Self.label(app))} \(depth.sending)\n"
        }
        text += "# HELP pgpush_queue_oldest_due_seconds Age of the oldest due row, per app.\n# TYPE pgpush_queue_oldest_due_seconds gauge\n"
        for (app, depth) in queue {
            text += "pgpush_queue_oldest_due_seconds{app=\(Self.label(app))} \(depth.oldestDueSeconds)\n"
        }
        // No app label: the apps are named by whoever inserted the rows, in any number.
        text += "# HELP pgpush_unserved_due Rows due for apps that no live worker serves (pgpush.unserved_apps).\n"
            + "# TYPE pgpush_unserved_due gauge\n"
        if snapshot.queueReadAt != nil { text += "pgpush_unserved_due \(snapshot.unserved.due)\n" }
        text += "# HELP pgpush_unserved_apps Apps with due rows that no live worker serves.\n"
            + "# TYPE pgpush_unserved_apps gauge\n"
        if snapshot.queueReadAt != nil { text += "pgpush_unserved_apps \(snapshot.unserved.apps)\n" }
        text += "# HELP pgpush_queue_finished_total Rows of the served apps that finished in the database as cancelled "
            + "(pgpush.cancel) or expired (by any worker), counted by this worker's heartbeat since it started; "
            + "every worker counts the same rows, so aggregate with max, not sum.\n"
        text += "# TYPE pgpush_queue_finished_total counter\n"
        for app in Set(apps).union(snapshot.finishedInDatabase.keys.map(\.app)).sorted() {
            for status in Self.databaseStatuses {
                let count = snapshot.finishedInDatabase[OutcomeKey(app: app, outcome: status, reason: "")] ?? 0
                text += "pgpush_queue_finished_total{app=\(Self.label(app)),status=\(Self.label(status))} \(count)\n"
            }
        }
        text += "# HELP pgpush_app_healthy 1 while this worker can send for the app and service (topic \"\") or the "
            + "topic, 0 while paused.\n"
        text += "# TYPE pgpush_app_healthy gauge\n"
        for (key, healthy) in snapshot.health.sorted(by: {
            ($0.key.app, $0.key.service, $0.key.topic) < ($1.key.app, $1.key.service, $1.key.topic)
        }) {
            text += "pgpush_app_healthy{app=\(Self.label(key.app)),service=\(Self.label(key.service)),topic=\(Self.label(key.topic))} "
                + "\(healthy ? 1 : 0)\n"
        }
        if !snapshot.rateShares.isEmpty {
            text += "# HELP pgpush_rate_share Requests per second this worker may send for the app and service: its share "
                + "of rate_per_app, leased through the database.\n# TYPE pgpush_rate_share gauge\n"
            for (key, share) in snapshot.rateShares.sorted(by: { ($0.key.app, $0.key.service) < ($1.key.app, $1.key.service) }) {
                text += "pgpush_rate_share{app=\(Self.label(key.app)),service=\(Self.label(key.service))} \(share)\n"
            }
        }
        // The connection series kept their names from the APNs-only releases; the service label says which.
        let routes = senders.sorted { ($0.key.app, $0.key.service) < ($1.key.app, $1.key.service) }
        let labels = { (route: Route) in "app=\(Self.label(route.app)),service=\(Self.label(route.service.rawValue))" }
        text += "# HELP pgpush_apns_connections Live HTTP/2 connections, per app and service.\n# TYPE pgpush_apns_connections gauge\n"
        for (route, statistics) in routes {
            text += "pgpush_apns_connections{\(labels(route))} \(statistics.liveConnections)\n"
        }
        text += "# HELP pgpush_apns_requests_total HTTP/2 requests written, resends included, per app and service.\n"
            + "# TYPE pgpush_apns_requests_total counter\n"
        for (route, statistics) in routes {
            text += "pgpush_apns_requests_total{\(labels(route))} \(statistics.requestsSent)\n"
        }
        // Every cause of every served route from the start, at zero: an alert on a rate sees the first failure.
        text += "# HELP pgpush_apns_connection_failures_total Connections that could not be opened, or that ended "
            + "on a protocol or I/O error, by cause (dns, tcp_connect, timeout, tls_certificate, tls_handshake, alpn, "
            + "protocol_error, io_error); the log line apns_connection_failed says why.\n"
        text += "# TYPE pgpush_apns_connection_failures_total counter\n"
        for (route, statistics) in routes {
            for cause in ConnectionFailure.Cause.allCases.sorted() {
                let count = statistics.connectionFailuresByCause[cause] ?? 0
                text += "pgpush_apns_connection_failures_total{\(labels(route)),cause=\(Self.label(cause.rawValue))} \(count)\n"
            }
        }
        text += "# HELP pgpush_rate_limiter_waits_total Sends that waited for the per-connection rate limit.\n"
        text += "# TYPE pgpush_rate_limiter_waits_total counter\n"
        for (route, statistics) in routes {
            text += "pgpush_rate_limiter_waits_total{\(labels(route))} \(statistics.rateLimiterWaits)\n"
        }
        return text
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// The queue gauges' label for the apps this worker does not serve.
    static let unservedApps = "other"

    /// The figures of an app the queue_depth view has no row for.
    private static let emptyQueue: (due: Int, sending: Int, oldestDueSeconds: Double) = (0, 0, 0)

    /// A quoted label value with `\`, `"` and newlines escaped.
    static func label(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n") + "\""
    }
}
