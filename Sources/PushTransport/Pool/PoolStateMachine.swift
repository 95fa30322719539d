import PGPushCore

/// Every decision of the connection pool, with no I/O: which connection a request goes to,
/// who waits and who is woken, when a slot reconnects, when shutdown may proceed.
///
/// Each event is a `mutating` method; the owner calls it under its lock with the current
/// instant and does what the returned value says (resume these waiters, close these
/// connections, tell a keeper its next step). Time and connections' own status come in
/// as arguments, and a reconnect is given as a count of failures whose jittered delay the
/// keeper draws, so the machine is driven in tests with instants constructed by hand and
/// stand-in connections, and gives the same answers every time.
package struct PoolStateMachine<Connection: AnyObject & Sendable> {
    package typealias Instant = PoolInstant
    package typealias WaiterID = WaiterQueue.ID
    package typealias Lease = PoolLease<Connection>
    package typealias LeaseAttempt = PoolLeaseAttempt<Connection>

    /// A connection that answered, or lived this long, counts as healthy: its successor
    /// connects without backoff. One that died younger and silent counts as a failure, so
    /// a server that accepts and drops connections is not hammered.
    package static var healthyLifetime: Duration { .seconds(10) }

    package enum Phase: Equatable {
        case notStarted
        /// The keepers run.
        case running
        /// No new requests; those admitted may finish.
        case shuttingDown
        /// Every connection closed; nothing happens any more.
        case shutDown
    }

    /// What a keeper does next.
    package enum KeeperStep: Equatable, Sendable {
        /// Connect, after the reconnect backoff for this many failures in a row (0: at once).
        case connect(afterFailures: Int)
        case stop
    }

    /// Whether a caller waits, and until when its timer is to wake it.
    package enum WaitDecision: Equatable {
        case proceed
        case wait(until: Instant)
    }

    /// What the pool reads of a connection's own state at each lease: both change on the
    /// I/O thread at any moment, before the connection's events tell the pool.
    package struct Availability {
        var acceptsRequests: Bool
        /// The streams the transport lets the connection have open now; requests beyond it
        /// wait here rather than in the transport's queue, so that each leaves for the wire
        /// at the instant its rate limiter gave it (queued in the transport, they would go
        /// out later in a burst APNs could count as more than the rate in one second).
        var streamLimit: Int
    }

    /// What the owner must do after an event, in this order: cancel the keeper tasks,
    /// resume the waiters (and cancel their timers), resume the start waiters, the
    /// keepers, close the connections, resume the idle waiters.
    package struct Actions {
        var cancelKeeperTasks = false
        var resumeWaiters: [WaiterID] = []
        var resumeStartWaiters = false
        var resumeKeepers: [(slot: Int, step: KeeperStep)] = []
        var close: [(connection: Connection, graceful: Bool)] = []
        var resumeIdleWaiters = false
    }

    /// What a connect attempt that succeeded leads to.
    package enum Installation {
        /// The connection fills the slot; the keeper watches it and waits for it to stop.
        /// `isReconnect`: another connection filled the slot before.
        case installed(isReconnect: Bool, Actions)
        /// The pool is shutting down: close the connection, the keeper stops.
        case refused
    }

    private(set) var phase: Phase = .notStarted
    private(set) var slots: [PoolSlot<Connection>]
    /// Bumped whenever a connection is installed, a stream is freed, a stream limit
    /// changes, or shutdown begins: a request that found nothing waits for a new one.
    private(set) var generation = 0
    private var waiters = WaiterQueue()
    /// One request sleeps until the next rate-limit instant; see `lease`.
    private(set) var rateSleeperActive = false
    private(set) var activeRequests = 0
    /// The last provider token APNs refused: a request that read it just before the
    /// renewal must not take it to a fresh connection.
    private var refusedJWT: String?
    private(set) var lastConnectFailure: ConnectionFailure?
    package var lastConnectError: String? { lastConnectFailure?.description }
    /// The transport takes one stream per connection until its first answer, which then
    /// opens it to many: every waiter looks again.
    private let oneStreamUntilFirstAnswer: Bool

    package init(connections: Int, ratePerConnection: Int?, oneStreamUntilFirstAnswer: Bool) {
        slots = (0..<connections).map { _ in PoolSlot(ratePerConnection: ratePerConnection) }
        self.oneStreamUntilFirstAnswer = oneStreamUntilFirstAnswer
    }

    package var isShuttingDown: Bool { phase == .shuttingDown || phase == .shutDown }
    package var liveConnections: Int { slots.count { $0.live != nil } }
    /// Connections whose rate is lowered because 429s spread.
    package var throttledConnections: Int { slots.count { $0.throttle?.isThrottled == true } }
    package var waitingRequests: Int { waiters.count }

    // MARK: starting

    /// The slots whose keepers are to start now: all of them the first time, none after.
    package mutating func startKeepers() -> Range<Int> {
        guard phase == .notStarted else { return 0..<0 }
        phase = .running
        return slots.indices
    }

    /// Whether `start()` waits: until every slot's first connect attempt ended, or shutdown.
    package var startMustWait: Bool { !isShuttingDown && !slots.allSatisfy(\.firstAttemptDone) }

    // MARK: leasing

    /// The best connection for a request that is to be written now: one with a free stream
    /// whose rate limiter allows a send now (the instant is recorded), preferring the least
    /// loaded. A slot named in `avoided` (where the request just failed) is taken only when
    /// nothing else is.
    ///
    /// Only a send that goes out at once is recorded, so the limiter's window holds real
    /// send instants. When streams are free but rates are used up, one waiting request (the
    /// "rate sleeper") sleeps until the exact instant the first limiter frees; the others
    /// wait in line, and each granted lease wakes the next, so a backlog costs one wake-up
    /// per send rather than one per waiting request. `wasRateSleeper`: the caller held that
    /// role and is back to try again.
    ///
    /// `token`: the provider token the request will carry. Only a connection without a
    /// token or with this one takes it; a connection that carries an older token is
    /// retired here (its streams finish, the keeper replaces it), so a renewed token never
    /// meets a connection that saw another.
    package mutating func lease(at now: Instant, avoiding avoided: Int? = nil, wasRateSleeper: Bool = false,
                        token: ConnectionCredential? = nil,
                        availability: (Connection) -> Availability) -> (LeaseAttempt, Actions) {
        var actions = Actions()
        if wasRateSleeper { rateSleeperActive = false }
        if isShuttingDown { return (.shutDown, actions) }
        if let token, token.text == refusedJWT { return (.tokenRefused, actions) }
        var best: Candidate?
        for index in slots.indices {
            guard case .connected(let live) = slots[index].phase else { continue }
            if let token, let carried = live.token, carried != token {
                if carried.issuedAt <= token.issuedAt && availability(live.connection).acceptsRequests {
                    retire(slot: index, connection: live.connection, at: now, into: &actions)
                }
                continue
            }
            let candidate = Candidate(slot: index, start: max(slots[index].rate.earliestStart(at: now), now),
                                      load: live.inFlight, avoided: index == avoided)
            if let best, !candidate.isBetter(than: best) { continue }
            // Asked only of a connection that would win: the transport answers under its own
            // lock, and asking all of them cost most of a lease with 20 connections.
            let status = availability(live.connection)
            guard status.acceptsRequests, live.inFlight < status.streamLimit else { continue }
            best = candidate
        }
        guard let best, let live = slots[best.slot].live else {
            return (.unavailable(generation: generation, rateLimited: false), actions)
        }
        guard best.start <= now else {
            if rateSleeperActive { return (.unavailable(generation: generation, rateLimited: true), actions) }
            rateSleeperActive = true
            return (.rateLimited(until: best.start, generation: generation), actions)
        }
        slots[best.slot].modifyLive(of: live.connection) { live in
            live.inFlight += 1
            if live.token == nil { live.token = token }
        }
        slots[best.slot].rate.record(at: now)
        // Pass the turn on: the next waiting request either finds room too or becomes the
        // rate sleeper.
        if let next = waiters.takeNext() { actions.resumeWaiters = [next] }
        return (.leased(Lease(slot: best.slot, connection: live.connection)), actions)
    }

    private struct Candidate {
        let slot: Int
        /// When the connection's rate lets it send, `now` at the earliest.
        let start: Instant
        let load: Int
        let avoided: Bool

        /// Not avoided first; then sendable soonest; then least loaded.
        func isBetter(than other: Candidate) -> Bool {
            if avoided != other.avoided { return !avoided }
            if start != other.start { return start < other.start }
            return load < other.load
        }
    }

    /// A rate sleeper that gives up (its deadline passed) hands the role to the next in line.
    package mutating func resignRateSleeper() -> Actions {
        rateSleeperActive = false
        return Actions(resumeWaiters: waiters.takeNext().map { [$0] } ?? [])
    }

    /// An id for a request about to wait; see `waitForChange`.
    package mutating func makeWaiterID() -> WaiterID { waiters.makeID() }

    /// A request that found nothing (at `generation`) waits for the pool to change, or
    /// until `deadline`; it proceeds at once if the pool changed since. Its `lane` decides
    /// its turn: a freed stream or rate instant goes to the most urgent lane's longest waiter.
    package mutating func waitForChange(_ id: WaiterID, lane: Lane, after generation: Int, until deadline: Instant,
                                at now: Instant) -> WaitDecision {
        guard now < deadline, generation == self.generation, !isShuttingDown else { return .proceed }
        waiters.append(id, lane: lane)
        return .wait(until: deadline)
    }

    /// The waiter's timer fired or its task was cancelled: it is resumed if it still waits.
    package mutating func waiterGaveUp(_ id: WaiterID) -> Actions {
        Actions(resumeWaiters: waiters.remove(id) ? [id] : [])
    }

    /// Ends a lease. `answered`: an HTTP answer arrived; `throttled`: it was 429
    /// TooManyRequests. Answers feed the slot's throttle, which may change the slot's rate.
    package mutating func finish(_ lease: Lease, answered: Bool, throttled: Bool, at now: Instant) -> Actions {
        var actions = Actions()
        let firstAnswer = slots[lease.slot].modifyLive(of: lease.connection) { live -> Bool in
            live.inFlight -= 1
            defer { if answered { live.answeredSinceConnect = true } }
            return answered && !live.answeredSinceConnect
        }
        if let firstAnswer {
            generation += 1
            // The first answer of a token connection opens it to many streams. The even
            // schedule starts afresh from here: the wait for this answer is no backlog to
            // catch up on, and a catch-up clump now would recur every second at the
            // transport's window.
            if firstAnswer && oneStreamUntilFirstAnswer {
                slots[lease.slot].rate.restartSchedule(at: now)
                actions.resumeWaiters = waiters.takeAll()
            } else if let next = waiters.takeNext() {
                actions.resumeWaiters = [next]
            }
        }
        if answered, var throttle = slots[lease.slot].throttle {
            let change = throttle.record(tooManyRequests: throttled, at: now)
            slots[lease.slot].throttle = throttle
            if let change { slots[lease.slot].rate.setLimit(change) }
        }
        return actions
    }

    /// Takes the lease's connection out of the pool and closes it gracefully (its other
    /// streams finish); the keeper connects a replacement.
    package mutating func retire(_ lease: Lease, at now: Instant) -> Actions {
        var actions = Actions()
        retire(slot: lease.slot, connection: lease.connection, at: now, into: &actions)
        return actions
    }

    /// Retires every connection that carries the provider token `jwt`: after APNs refused
    /// it, each request written with it would be refused too.
    package mutating func retireConnections(carrying jwt: String, at now: Instant) -> Actions {
        refusedJWT = jwt
        var actions = Actions()
        for index in slots.indices {
            guard let live = slots[index].live, live.token?.text == jwt else { continue }
            retire(slot: index, connection: live.connection, at: now, into: &actions)
        }
        return actions
    }

    private mutating func retire(slot: Int, connection: Connection, at now: Instant, into actions: inout Actions) {
        stop(slot: slot, connection: connection, at: now, into: &actions)
        actions.close.append((connection, graceful: true))
    }

    // MARK: keeping connections

    /// The keeper is about to connect (its backoff, if any, has passed): false once the
    /// pool shuts down, and the keeper stops.
    package mutating func connectAttemptBegins(slot: Int) -> Bool {
        guard !isShuttingDown else { return false }
        if case .waitingToConnect(let failures) = slots[slot].phase {
            slots[slot].phase = .connecting(afterFailures: failures)
        }
        return true
    }

    package mutating func connectFailed(slot: Int, failure: ConnectionFailure) -> (KeeperStep, Actions) {
        lastConnectFailure = failure
        var actions = Actions()
        let failures = failuresSoFar(slot: slot) + 1
        if !isShuttingDown { slots[slot].phase = .waitingToConnect(afterFailures: failures) }
        markFirstAttemptDone(slot: slot, into: &actions)
        return (isShuttingDown ? .stop : .connect(afterFailures: failures), actions)
    }

    /// A connect attempt gave `connection`: it fills the slot and every waiting request
    /// looks again.
    package mutating func connected(_ connection: Connection, slot: Int, at now: Instant) -> Installation {
        guard !isShuttingDown else { return .refused }
        let live = PoolSlot.Live(connection: connection, failuresBefore: failuresSoFar(slot: slot))
        slots[slot].phase = .connected(live)
        slots[slot].connectedAt = now
        let isReconnect = slots[slot].connectedBefore
        slots[slot].connectedBefore = true
        generation += 1
        var actions = Actions(resumeWaiters: waiters.takeAll())
        markFirstAttemptDone(slot: slot, into: &actions)
        return .installed(isReconnect: isReconnect, actions)
    }

    /// The keeper waits until `connection` no longer fills `slot` (`nil`: it is to be
    /// resumed with its step when that happens), or goes on with the step returned.
    package mutating func keeperAwaitsReplacement(slot: Int, connection: Connection) -> KeeperStep? {
        if isShuttingDown { return .stop }
        if slots[slot].modifyLive(of: connection, { $0.keeperWaits = true }) != nil { return nil }
        return .connect(afterFailures: failuresSoFar(slot: slot))
    }

    /// The server's stream limit changed, or its first SETTINGS arrived: waiting requests
    /// look again.
    package mutating func streamLimitChanged(slot: Int, connection: Connection) -> Actions {
        guard slots[slot].live(of: connection) != nil else { return Actions() }
        generation += 1
        return Actions(resumeWaiters: waiters.takeAll())
    }

    /// The connection stopped taking requests (GOAWAY, closed, or retired): the slot
    /// empties and its keeper reconnects, with backoff if the connection was no success.
    package mutating func connectionStopped(slot: Int, connection: Connection, at now: Instant) -> Actions {
        var actions = Actions()
        stop(slot: slot, connection: connection, at: now, into: &actions)
        return actions
    }

    private mutating func stop(slot: Int, connection: Connection, at now: Instant, into actions: inout Actions) {
        guard let live = slots[slot].live(of: connection) else { return }
        let healthy = live.answeredSinceConnect
            || slots[slot].connectedAt.map { $0.duration(to: now) >= Self.healthyLifetime } ?? false
        let failures = healthy ? 0 : live.failuresBefore + 1
        slots[slot].phase = .waitingToConnect(afterFailures: failures)
        if live.keeperWaits {
            actions.resumeKeepers.append((slot, isShuttingDown ? .stop : .connect(afterFailures: failures)))
        }
    }

    /// Consecutive failures of the slot's connections, up to the current one.
    private func failuresSoFar(slot: Int) -> Int {
        switch slots[slot].phase {
        case .waitingToConnect(let failures), .connecting(let failures): return failures
        case .connected(let live): return live.failuresBefore
        case .shutDown: return 0
        }
    }

    private mutating func markFirstAttemptDone(slot: Int, into actions: inout Actions) {
        let wasWaiting = startMustWait
        slots[slot].firstAttemptDone = true
        if wasWaiting && !startMustWait { actions.resumeStartWaiters = true }
    }

    // MARK: requests in flight and shutdown

    /// Counts a request in; false once shutdown has begun.
    package mutating func admit() -> Bool {
        guard !isShuttingDown else { return false }
        activeRequests += 1
        return true
    }

    package mutating func leave() -> Actions {
        activeRequests -= 1
        return Actions(resumeIdleWaiters: activeRequests == 0)
    }

    /// Stops new requests and wakes everyone waiting: requests (to fail), `start()`.
    package mutating func beginShutdown() -> Actions {
        guard !isShuttingDown else { return Actions() }
        phase = .shuttingDown
        generation += 1
        return Actions(resumeWaiters: waiters.takeAll(), resumeStartWaiters: true)
    }

    /// Shutdown waits for the requests in flight to finish, until `deadline`.
    package func waitForIdle(until deadline: Instant, at now: Instant) -> WaitDecision {
        activeRequests == 0 || now >= deadline ? .proceed : .wait(until: deadline)
    }

    /// The idle wait's deadline passed: shutdown goes on with requests still in flight.
    package func idleDeadlinePassed() -> Actions {
        Actions(resumeIdleWaiters: true)
    }

    /// Ends shutdown: every connection is closed at once (requests still open fail as "may
    /// have been processed") and every keeper stops.
    package mutating func finishShutdown() -> Actions {
        var actions = Actions(cancelKeeperTasks: true)
        phase = .shutDown
        for index in slots.indices {
            if let live = slots[index].live {
                actions.close.append((live.connection, graceful: false))
                if live.keeperWaits { actions.resumeKeepers.append((index, .stop)) }
            }
            slots[index].phase = .shutDown
        }
        return actions
    }
}
