import Foundation
import Locking
import PGPushCore
import PushQueue
import PushTransport
import Synchronization

/// One row from claim to outcome: validate, admit (app and topic health), send, decide, record.
extension Worker {
    /// Rows in flight per app: a second's worth at the cap, never more than the
    /// connections carry (a high or no cap must not claim a whole backlog).
    static func inFlightTarget(of sender: any NotificationSender) -> Int {
        let carried = max(sender.connections, 1) * inFlightPerConnection
        return min(sender.requestsPerSecond.map { max($0, 1) } ?? carried, carried)
    }

    /// The route's in-flight target: a second's worth at the cap, or at this worker's share
    /// of rate_per_app when that is less (one row while it has none).
    func inFlightTarget(_ route: Route, of sender: any NotificationSender) -> Int {
        min(Self.inFlightTarget(of: sender), sharedRates[route].map { max($0.share, 1) } ?? .max)
    }

    /// Small top-ups cost a database round trip each: a claim waits until a quarter of the
    /// window (at most 100 rows) is free, or nothing is in flight.
    static func smallestClaim(target: Int) -> Int { max(1, min(target / 4, 100)) }

    /// How many rows the claim loop may claim now, or nil to wait for room: a probing app
    /// sends one row alone, a paused one none.
    static func claimLimit(_ phase: AppHealth.Phase, target: Int, inFlight: Int) -> Int? {
        let limit: Int
        switch phase {
        case .healthy: limit = target - inFlight
        case .probing: limit = inFlight == 0 ? 1 : 0
        case .paused: return nil
        }
        return limit >= smallestClaim(target: target) || (limit > 0 && inFlight == 0) ? limit : nil
    }

    func deliver(_ row: ClaimedNotification, app: AppConfiguration, route: Route, sender: any NotificationSender) async {
        defer {
            let remaining = inFlight.remove(row.id)
            let target = inFlightTarget(route, of: sender)
            // Wakes the claim loop only if it waits for room and now has it, or nothing is left
            // in flight (a probing app, a drain): a wake-up per row cost a timer and a claim per row.
            claimLoops[route]?.sendFinished(roomNow: remaining == 0 || target - remaining >= Self.smallestClaim(target: target))
        }
        if isStopping {
            writer.add(.released(row))
            return
        }
        await send(row, app: app, route: route, using: sender)
    }

    private func send<Sender: NotificationSender>(_ row: ClaimedNotification, app: AppConfiguration, route: Route,
                                                  using sender: Sender) async {
        let request: Sender.Request
        do throws(RowRefusal) {
            request = try sender.prepare(row.notification)
        } catch {
            let outcome = OutcomeDecider(retry: app.retry).rejected(row, error)
            writer.add(outcome)
            metrics.recordOutcome(app: app.name, service: route.service, outcome)
            counters.withLock { $0.failed += 1 }
            log.info("notification_rejected", ["id": row.id, "app": app.name, "reason": error.reason, "detail": error.detail])
            return
        }
        let scope = sender.scope(of: request)
        if let scope, let health = health[route] {
            let wait: Duration? = switch health.admitWithoutWaiting(scope: scope) {
            case .send: nil
            case .park(let wait): wait
            case .waitForProbe: await health.admit(scope: scope)
            }
            if let wait {
                // Its scope is paused: back to the queue unsent and uncounted, last answer kept.
                put(Outcome(id: row.id, claimCount: row.claimCount, disposition: .retry(after: wait, countsAsAttempt: false)),
                    route: route)
                return
            }
        }
        if let gate = sharedRates[route], !(await gate.admit(lane: row.notification.lane)) {
            writer.add(.released(row))
            return
        }
        let delivery = await sender.send(request, lane: row.notification.lane)
        metrics.recordLatency(delivery.latency)
        if let failure = delivery.failure, failure.cause == .responseTooLarge {
            // The row follows the no-answer rule like a deadline; the line says which bound the
            // other side went past (body or header list, with the limit).
            repeated.warning("response_too_large", key: app.name, ["app": app.name, "detail": failure.detail])
        }
        let outcome = random.withLock { OutcomeDecider(retry: app.retry).decide(row, delivery, using: &$0) }
        put(outcome, route: route)
        metrics.recordOutcome(app: app.name, service: route.service, outcome)
        record(delivery, outcome: outcome, row: row, scope: scope, route: route, sender: sender)
    }

    /// Hands an outcome to the writer; a row put back is claimed again when it comes due
    /// (its `send_after` is written within one flush interval).
    func put(_ outcome: Outcome, route: Route) {
        writer.add(outcome)
        if case .retry(let delay, _) = outcome.disposition {
            claimLoops[route]?.retryComesDue(at: .now + delay + configuration.flushInterval)
        }
    }

    /// Counts the outcome, logs an answer that was not a delivery, and tells the app's
    /// health what the delivery proved or refused.
    func record(_ delivery: Delivery, outcome: Outcome, row: ClaimedNotification, scope: String?, route: Route,
                sender: some NotificationSender) {
        let app = route.app
        counters.withLock { counters in
            counters.sent += 1
            switch outcome.disposition {
            case .delivered: counters.delivered += 1
            case .failed, .expired: counters.failed += 1
            case .retry: counters.retried += 1
            }
        }
        if outcome.recordsError {
            // A Web Push endpoint is a capability (whoever holds it may push): its origin is logged, not the URL.
            let recipient = row.notification.channelID.map { ("channel", $0) }
                ?? (row.notification.subscription != nil ? ("origin", scope ?? "") : ("token", row.notification.deviceToken))
            log.info("send_error", ["id": row.id, "app": app, "service": route.service.rawValue, recipient.0: recipient.1,
                                    "status": outcome.httpStatus.map(String.init) ?? "none",
                                    "reason": outcome.reason ?? "none", "outcome": Self.describe(outcome.disposition)])
        }
        guard let appHealth = health[route] else { return }
        if let hint = delivery.hintsWrongSetup {
            let setupScope = sender.wrongSetupIsPerScope ? scope : nil
            switch appHealth.recordAnswer(hintsWrongSetup: hint, scope: setupScope) {
            case .suspected:
                let wrongSetup = sender.wrongSetup
                log.error("wrong_setup_suspected", ["app": app, "service": route.service.rawValue, "scope": setupScope ?? "app",
                                                    "why": wrongSetup.why])
                reportHealth(route, topic: setupScope, healthy: false, reason: wrongSetup.reason)
            case .cleared:
                reportHealth(route, topic: setupScope, healthy: true, reason: nil)
            case .unchanged:
                break
            }
        }
        if let flag = delivery.healthFlag, appHealth.flag(flag) {
            log.error("service_refused_part", ["app": app, "service": route.service.rawValue, "reason": flag])
            reportHealth(route, healthy: false, reason: flag)
            return
        }
        switch (delivery.verdict, scope) {
        case (.paused(.requestScope, let reason), let scope?):
            if let pause = appHealth.reportProblem(scope: scope) {
                log.error("scope_paused", ["app": app, "service": route.service.rawValue, "scope": scope, "reason": reason,
                                           "retry_in": pause])
                reportHealth(route, topic: scope, healthy: false, reason: reason)
            }
        case (.paused(_, let reason), _):
            if let scope { _ = appHealth.scopeAnswered(scope, accepted: false) }
            if let pause = appHealth.reportProblem() {
                log.error("app_paused", ["app": app, "service": route.service.rawValue, "reason": reason, "retry_in": pause])
                reportHealth(route, healthy: false, reason: reason)
            }
        default:
            if let scope, appHealth.scopeAnswered(scope, accepted: delivery.provesCredentials) {
                log.info("scope_resumed", ["app": app, "service": route.service.rawValue, "scope": scope])
                reportHealth(route, topic: scope, healthy: true, reason: nil)
            }
            if delivery.provesCredentials, appHealth.reportSuccess() {
                reportHealth(route, healthy: true, reason: nil)
            }
        }
    }

    func reportHealth(_ route: Route, topic: String? = nil, healthy: Bool, reason: String?) {
        metrics.recordHealth(app: route.app, service: route.service, topic: topic, healthy: healthy)
        Task { [self] in
            do {
                try await maintenance.run { queue in
                    try queue.reportAppHealth(app: route.app, service: route.service, topic: topic, healthy: healthy,
                                              reason: reason)
                }
            } catch {
                log.warning("app_health_not_written", ["app": route.app, "service": route.service.rawValue, "error": error])
            }
        }
    }

    static func describe(_ disposition: Outcome.Disposition) -> String {
        switch disposition {
        case .delivered: "delivered"
        case .failed: "failed"
        case .expired: "expired"
        case .retry(let delay, let counts): "retry_in_\(delay)" + (counts ? "" : "_uncounted")
        }
    }
}
