/// One of the pool's connection places: where its keeper is in the connect cycle, the
/// connection that fills it (if any) and what the pool knows about it. The rate and the
/// 429 throttle belong to the slot, so a replacement connection inherits a slowed-down
/// rate instead of resetting it.
struct PoolSlot<Connection: AnyObject & Sendable> {
    /// A connection that fills the slot, from its install until it stops taking requests.
    struct Live {
        let connection: Connection
        let connectedAt: ContinuousClock.Instant
        /// Failed connections before this one since the last healthy one: if this one
        /// fails too, the backoff grows from there.
        let failuresBefore: Int
        var answeredSinceConnect = false
        /// The provider token the connection carries (nil: none yet, or certificate auth).
        /// A connection carries one token for its life: APNs refuses a second within 20
        /// minutes (429 TooManyProviderTokenUpdates), and a renewal every 50 minutes costs
        /// one reconnect, far less than tracking which connection may take which token.
        var token: ProviderToken?
        /// Requests leased on the connection and not yet finished: streams it uses.
        var inFlight = 0
        /// The keeper waits for the connection to stop taking requests, to replace it.
        var keeperWaits = false
    }

    enum Phase {
        /// No connection; the keeper connects next, after the backoff for this many
        /// failures in a row (none: at once).
        case waitingToConnect(afterFailures: Int)
        /// A connect attempt is under way, after this many failures in a row.
        case connecting(afterFailures: Int)
        case connected(Live)
        /// The pool has shut down; the slot is never filled again.
        case shutDown
    }

    var phase: Phase = .waitingToConnect(afterFailures: 0)
    var throttle: TooManyRequestsThrottle<ContinuousClock.Instant>?
    var rate: ConnectionRate
    var firstAttemptDone = false
    /// A connection filled the slot before: the next one is a reconnect.
    var connectedBefore = false

    init(ratePerConnection: Int?) {
        throttle = ratePerConnection.map { TooManyRequestsThrottle(configuredRate: $0) }
        rate = ConnectionRate(limit: ratePerConnection)
    }

    var live: Live? {
        if case .connected(let live) = phase { return live }
        return nil
    }

    /// The slot's live state when `connection` still fills it.
    func live(of connection: Connection) -> Live? {
        guard let live, live.connection === connection else { return nil }
        return live
    }

    /// Changes the live state of `connection` in place; nil when it no longer fills the slot.
    mutating func modifyLive<Result>(of connection: Connection, _ body: (inout Live) -> Result) -> Result? {
        guard var live = live(of: connection) else { return nil }
        let result = body(&live)
        phase = .connected(live)
        return result
    }
}
