import Foundation
import Locking
import PGPushCore
import Postgres
import PushQueue
import PushTransport
import Synchronization

/// The claim loop: one per route (an app and a service), claiming what there is room for,
/// when `ClaimSchedule` says.
extension Worker {
    /// Wake-ups are needed unless every app's loop polls at its rows' pace anyway
    /// (`ClaimSchedule.polling`): then the listener stops listening until one does not.
    func listenUnlessEveryAppPolls() {
        listener.setListening(!claimLoops.values.allSatisfy { $0.schedule.withLock { $0.polling } })
    }

    func dispatch(_ route: Route) async {
        guard let app = configuration.apps.first(where: { $0.name == route.app }), let sender = senders[route],
              let loop = claimLoops[route], let health = health[route] else { return }
        var backoff = Duration.milliseconds(100)
        await withDiscardingTaskGroup { group in
            while !isStopping {
                if case .paused(let until) = health.phase {
                    await loop.doorbell.wait(timeout: ContinuousClock.now.duration(to: until))
                    // The rows the pause held back are due when it ends.
                    loop.schedule.withLock { $0.rowsMayBeWaiting() }
                    continue
                }
                let room = { [self] in
                    Self.claimLimit(health.phase, target: inFlightTarget(route, of: sender), inFlight: inFlight.count(route))
                }
                guard let limit = room() else {
                    await loop.waitForRoom(timeout: configuration.pollInterval) { room() != nil }
                    continue
                }
                switch loop.schedule.withLock({ $0.next(at: .now) }) {
                case .claim:
                    break
                case .wait(let until, let wakeEarly):
                    let wait = ContinuousClock.now.duration(to: until)
                    // Sleeping through rings (the stop latch, not the doorbell) is what lets a
                    // burst of NOTIFYs share one claim.
                    if wakeEarly { await loop.doorbell.wait(timeout: wait) } else { await stopRequested.wait(timeout: wait) }
                    continue
                }
                let batch = min(limit, loop.schedule.withLock { $0.claimSize.current })
                let result: ClaimResult
                let lookBack = loop.schedule.withLock { $0.claimStarted(at: .now) }
                do {
                    result = try await claims.run { [configuration] queue in
                        try queue.claim(app: app.name, service: route.service, limit: batch, lease: configuration.lease,
                                        skipKnownInvalidTokens: app.skipKnownInvalidTokens, lookBack: lookBack)
                    }
                    backoff = .milliseconds(100)
                    repeated.recovered("claim_failed", key: app.name)
                } catch let error as PostgresError where error.sqlState == PostgresError.queryCanceled {
                    // Not an outage: the claim was too big for the statement timeout. Smaller at
                    // once, no backoff; logged once while claims stay shrunk.
                    let size = loop.schedule.withLock { schedule in
                        schedule.claimFailed(timedOut: true)
                        return schedule.claimSize.current
                    }
                    repeated.warning("claim_timed_out", key: app.name, [
                        "app": app.name, "next_claim_rows": size, "error": error,
                        "why": "the database cancelled the claim for time (statement_timeout?); claims shrink until they fit",
                    ])
                    continue
                } catch {
                    loop.schedule.withLock { $0.claimFailed() }
                    listenUnlessEveryAppPolls()
                    repeated.warning("claim_failed", key: app.name, ["app": app.name, "retry_in": backoff, "error": error])
                    // The stop latch, not the doorbell: every NOTIFY rings the doorbell, and a
                    // backoff that ends at each ring is no backoff in an outage.
                    await stopRequested.wait(timeout: backoff)
                    backoff = min(backoff * 2, .seconds(5))
                    continue
                }
                let taken = result.claimed.count + result.expiredIDs.count + result.knownInvalidIDs.count
                let grown = loop.schedule.withLock { schedule in
                    schedule.claimEnded(taken: taken, asked: batch)
                    return schedule.claimSize.isFull
                }
                if grown { repeated.recovered("claim_timed_out", key: app.name) }
                listenUnlessEveryAppPolls()
                if !result.expiredIDs.isEmpty {
                    log.info("expired_before_send", ["app": app.name, "count": result.expiredIDs.count])
                    metrics.recordExpiredAtClaim(app: app.name, service: route.service, count: result.expiredIDs.count)
                }
                if !result.knownInvalidIDs.isEmpty {
                    log.info("known_invalid_tokens_skipped", [
                        "app": app.name, "service": route.service.rawValue, "count": result.knownInvalidIDs.count,
                        "why": "the service said before that these tokens are gone (APNs Unregistered or ExpiredToken, FCM UNREGISTERED)",
                    ])
                    metrics.recordKnownInvalid(app: app.name, service: route.service, count: result.knownInvalidIDs.count)
                }
                inFlight.add(result.claimed, route: route)
                for row in result.claimed {
                    group.addTask { [self] in await deliver(row, app: app, route: route, sender: sender) }
                }
            }
        }
    }
}
