import HTTP2TLS

/// One of the pool's connection places: the connection that currently fills it (if any)
/// and what the pool knows about it. The rate and the 429 throttle belong to the
/// slot, so a replacement connection inherits a slowed-down rate instead of resetting it.
struct PoolSlot {
    var connection: HTTP2ClientConnection?
    var connectedAt: ContinuousClock.Instant?
    var answeredSinceConnect = false
    /// The provider token the current connection carries (nil: none yet, or certificate
    /// auth). A connection carries one token for its life: APNs refuses a second within
    /// 20 minutes (429 TooManyProviderTokenUpdates), and a renewal every 50 minutes costs
    /// one reconnect, far less than tracking which connection may take which token.
    var token: ProviderToken?
    /// Requests leased on the current connection and not yet finished: streams it uses.
    var inFlight = 0
    /// Set when the current connection stopped taking requests; read by the keeper.
    var lastConnectionWasHealthy = false
    var replacementWaiter: CheckedContinuation<Bool, Never>?
    var throttle: TooManyRequestsThrottle<ContinuousClock.Instant>?
    var rate: ConnectionRate
    var firstAttemptDone = false

    init(ratePerConnection: Int?) {
        throttle = ratePerConnection.map { TooManyRequestsThrottle(configuredRate: $0) }
        rate = ConnectionRate(limit: ratePerConnection)
    }

    /// How many streams the current connection may have open: the server's
    /// MAX_CONCURRENT_STREAMS (1 until its SETTINGS arrive) under our own cap, and just 1
    /// on a token connection until its first answer. Requests beyond it
    /// wait in the pool rather than in the transport's queue, so that a request leaves for
    /// the wire at the instant its rate limiter gave it; queued in the transport, it would
    /// go out later in a burst that APNs could count as more than the rate in one second.
    func streamLimit(localCap: Int, oneStreamUntilFirstAnswer: Bool) -> Int {
        guard let connection else { return 0 }
        if oneStreamUntilFirstAnswer && !answeredSinceConnect { return 1 }
        return max(1, min(localCap, connection.status.peerMaxConcurrentStreams))
    }
}
