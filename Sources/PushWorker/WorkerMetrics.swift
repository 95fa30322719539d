import Foundation
import Locking
import PushQueue

/// What the worker counts for Prometheus: outcomes by app and reason, send
/// latency, queue depth as last seen. Written from many tasks; read per scrape.
final class WorkerMetrics: Sendable {
    /// Upper bounds of the latency histogram, in seconds.
    static let latencyBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct OutcomeKey: Hashable {
        var app: String
        var outcome: String
        var reason: String
    }

    private struct State {
        var outcomes: [OutcomeKey: Int] = [:]
        var latencyCounts = [Int](repeating: 0, count: WorkerMetrics.latencyBuckets.count + 1)
        var latencySum = 0.0
        var queueDepth: [String: QueueDepth] = [:]
        var lastDatabaseContact: ContinuousClock.Instant?
    }

    private let state = Locked(State())

    func recordOutcome(app: String, _ outcome: Outcome) {
        let name: String
        switch outcome.disposition {
        case .delivered: name = "delivered"
        case .failed: name = "failed"
        case .expired: name = "expired"
        case .retry(_, let counts): name = counts ? "retried" : "requeued"
        }
        let key = OutcomeKey(app: app, outcome: name, reason: outcome.reason ?? "")
        state.withLock { $0.outcomes[key, default: 0] += 1 }
    }

    /// Rows the claim finished as `KnownInvalidToken`, counted like failed outcomes with that reason.
    func recordKnownInvalid(app: String, count: Int) {
        let key = OutcomeKey(app: app, outcome: "failed", reason: "KnownInvalidToken")
        state.withLock { $0.outcomes[key, default: 0] += count }
    }

    func recordLatency(_ duration: Duration) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        let bucket = Self.latencyBuckets.firstIndex { seconds <= $0 } ?? Self.latencyBuckets.count
        state.withLock { state in
            state.latencyCounts[bucket] += 1
            state.latencySum += seconds
        }
    }

    func recordQueueDepth(_ depth: [String: QueueDepth]) {
        state.withLock { state in
            state.queueDepth = depth
            state.lastDatabaseContact = .now
        }
    }

    func recordDatabaseContact() {
        state.withLock { $0.lastDatabaseContact = .now }
    }

    /// Ready: the database answered within `window`.
    func isReady(window: Duration) -> Bool {
        state.withLock { state in state.lastDatabaseContact.map { ContinuousClock.now - $0 < window } ?? false }
    }

    /// Prometheus text format (version 0.0.4).
    func render(connections: [String: (live: Int, rateLimiterWaits: Int, requests: Int)]) -> String {
        let snapshot = state.withLock { $0 }
        var text = ""
        text += "# HELP pgpush_notifications_total Notifications finished or rescheduled by this worker, by outcome and reason.\n"
        text += "# TYPE pgpush_notifications_total counter\n"
        for (key, count) in snapshot.outcomes.sorted(by: { ($0.key.app, $0.key.outcome, $0.key.reason) < ($1.key.app, $1.key.outcome, $1.key.reason) }) {
            text += "pgpush_notifications_total{app=\(Self.label(key.app)),outcome=\(Self.label(key.outcome)),reason=\(Self.label(key.reason))} \(count)\n"
        }
        text += "# HELP pgpush_send_latency_seconds From handing a request to the APNs client to its result.\n"
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
        text += "# HELP pgpush_queue_due Rows due now, per app (as of the last heartbeat).\n# TYPE pgpush_queue_due gauge\n"
        for (app, depth) in snapshot.queueDepth.sorted(by: { $0.key < $1.key }) {
            text += "pgpush_queue_due{app=\(Self.label(app))} \(depth.due)\n"
        }
        text += "# HELP pgpush_queue_sending Rows being sent by any worker, per app.\n# TYPE pgpush_queue_sending gauge\n"
        for (app, depth) in snapshot.queueDepth.sorted(by: { $0.key < $1.key }) {
            text += "pgpush_queue_sending{app=\(Self.label(app))} \(depth.sending)\n"
        }
        text += "# HELP pgpush_queue_oldest_due_seconds Age of the oldest due row, per app.\n# TYPE pgpush_queue_oldest_due_seconds gauge\n"
        for (app, depth) in snapshot.queueDepth.sorted(by: { $0.key < $1.key }) {
            text += "pgpush_queue_oldest_due_seconds{app=\(Self.label(app))} \(depth.oldestDueSeconds)\n"
        }
        text += "# HELP pgpush_apns_connections Live HTTP/2 connections to APNs, per app.\n# TYPE pgpush_apns_connections gauge\n"
        for (app, value) in connections.sorted(by: { $0.key < $1.key }) {
            text += "pgpush_apns_connections{app=\(Self.label(app))} \(value.live)\n"
        }
        text += "# HELP pgpush_apns_requests_total HTTP/2 requests written, resends included.\n# TYPE pgpush_apns_requests_total counter\n"
        for (app, value) in connections.sorted(by: { $0.key < $1.key }) {
            text += "pgpush_apns_requests_total{app=\(Self.label(app))} \(value.requests)\n"
        }
        text += "# HELP pgpush_rate_limiter_waits_total Sends that waited for the per-connection rate limit.\n"
        text += "# TYPE pgpush_rate_limiter_waits_total counter\n"
        for (app, value) in connections.sorted(by: { $0.key < $1.key }) {
            text += "pgpush_rate_limiter_waits_total{app=\(Self.label(app))} \(value.rateLimiterWaits)\n"
        }
        return text
    }

    /// A quoted label value with `\`, `"` and newlines escaped.
    static func label(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n") + "\""
    }
}
