import HTTP2TLS

/// One of the pool's connection places: the connection that currently fills it (if any)
/// and what the pool knows about it. The rate limiter and 429 throttle belong to the
/// slot, so a replacement connection inherits a slowed-down rate instead of resetting it.
struct PoolSlot {
    var connection: HTTP2ClientConnection?
    var connectedAt: ContinuousClock.Instant?
    var answeredSinceConnect = false
    /// Requests leased on this slot and not yet finished.
    var inFlight = 0
    /// Set when the current connection stopped taking requests; read by the keeper.
    var lastConnectionWasHealthy = false
    var replacementWaiter: CheckedContinuation<Bool, Never>?
    var throttle: TooManyRequestsThrottle<ContinuousClock.Instant>?
    var firstAttemptDone = false

    init(ratePerConnection: Int?) {
        throttle = ratePerConnection.map { TooManyRequestsThrottle(configuredRate: $0) }
    }
}
