/// One of the pool's connection places: where its keeper is in the connect cycle, the
/// connection that fills it (if any) and what the pool knows about it. The rate and the
/// 429 throttle belong to the slot, so a replacement connection inherits a slowed-down
/// rate instead of resetting it.
package struct PoolSlot<Connection: AnyObject & Sendable> {
    /// A connection that fills the slot, from its install until it stops taking requests.
    package struct Live {
        let connection: Connection
        /// Failed connections before this one since the last healthy one: if this one
        /// fails too, the backoff grows from there.
        let failuresBefore: Int
        var answeredSinceConnect = false
        /// The provider token the connection carries (nil: none yet, or certificate auth).
        /// A connection carries one token for its life: APNs refuses a second within 20
        /// minutes (429 TooManyConnectionCredentialUpdates), and a renewal every 50 minutes costs
        /// one reconnect, far less than tracking which connection may take which token.
        var token: ConnectionCredential?
        /// Requests leased on the connection and not yet finished: streams it uses.
        var inFlight = 0
        /// The keeper waits for the connection to stop taking requests, to replace it.
        var keeperWaits = false
    }

    package enum Phase {
        /// No connection; the keeper connects next, after the backoff for this many
        /// failures in a row (none: at once).
        case waitingToConnect(afterFailures: Int)
        /// A connect attempt is under way, after this many failures in a row.
        case connecting(afterFailures: Int)
        case connected(Live)
        /// The pool has shut down; the slot is never filled again.
        case shutDown
    }

    package var phase: Phase = .waitingToConnect(afterFailures: 0)
    /// When the slot's current (or last) connection was installed: one that lived
    /// `healthyLifetime` counts as healthy when it stops.
    package var connectedAt: PoolInstant?
    package var throttle: TooManyRequestsThrottle<PoolInstant>?
    package var rate: ConnectionRate
    package var firstAttemptDone = false
    /// A connection filled the slot before: the next one is a reconnect.
    package var connectedBefore = false

    package init(ratePerConnection: Int?) {
        throttle = ratePerConnection.map { TooManyRequestsThrottle(configuredRate: $0) }
        rate = ConnectionRate(limit: ratePerConnection)
    }

    package var live: Live? {
        if case .connected(let live) = phase { return live }
        return nil
    }

    /// The slot's live state when `connection` still fills it.
    package func live(of connection: Connection) -> Live? {
        guard let live, live.connection === connection else { return nil }
        return live
    }

    /// Changes the live state of `connection` in place; nil when it no longer fills the slot.
    package mutating func modifyLive<Result>(of connection: Connection, _ body: (inout Live) -> Result) -> Result? {
        guard var live = live(of: connection) else { return nil }
        let result = body(&live)
        phase = .connected(live)
        return result
    }
}
