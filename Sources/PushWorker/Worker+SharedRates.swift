import PushQueue

/// `rate_per_app`: each rate-shared route's lease on its share, kept while the worker sends
/// (sql/018_daily_operations.sql says how workers share a rate).
extension Worker {
    /// A share holds this long without renewal; it is renewed every `rateShareRenewal`, and
    /// more often while it is below the fair share (the others are lowering theirs).
    static let rateShareLease: Duration = .seconds(3)
    static let rateShareRenewal: Duration = .seconds(1)
    static let rateShareRenewalWhileShort: Duration = .milliseconds(250)

    /// Renews every rate-shared route's share until the sends have ended, then gives the
    /// shares back. A renewal that fails is logged; the share lapses with its lease.
    func keepRateShares(until sendsEnded: Latch) async {
        guard let rateShares, !sharedRates.isEmpty else { return }
        while !sendsEnded.isOpen {
            var next = Self.rateShareRenewal
            for (route, gate) in sharedRates {
                let askedAt = ContinuousClock.now
                do {
                    let grant = try await rateShares.run { queue in
                        try queue.takeRateShare(app: route.app, service: route.service, rate: gate.rate, lease: Self.rateShareLease)
                    }
                    gate.granted(grant, askedAt: askedAt, lease: Self.rateShareLease)
                    // The hard cap where requests are written: the lease counted from before the ask.
                    senders[route]?.sharedWindow?.grant(limit: grant.share,
                                                        validFor: askedAt + Self.rateShareLease - ContinuousClock.now)
                    metrics.recordRateShare(app: route.app, service: route.service, share: grant.share)
                    if grant.share < grant.fair { next = Self.rateShareRenewalWhileShort }
                    repeated.recovered("rate_share_failed", key: route.description)
                } catch {
                    repeated.warning("rate_share_failed", key: route.description, [
                        "app": route.app, "service": route.service.rawValue, "error": error,
                        "why": "rate_per_app is shared through the database; the app's sends stop when the share's lease ends",
                    ])
                }
            }
            await sendsEnded.wait(timeout: next)
        }
        for route in sharedRates.keys {
            _ = try? await rateShares.run { queue in try queue.releaseRateShare(app: route.app, service: route.service) }
        }
    }
}
