import HTTP2TLS
import Locking

/// Keeps an app's HTTP/2 connections to APNs open and hands them out to requests.
///
/// Each slot has a keeper task that connects, waits until the connection stops taking
/// requests (GOAWAY, close, or retired after an auth error), and connects again: at once
/// after a healthy connection, otherwise after the reconnect backoff with jitter. The
/// transport resolves DNS afresh at each connect.
///
/// Requests wait here, not in the transport's queue, until a connection has a free stream
/// and rate to spare, then go to the connection that can send soonest, then to the least
/// loaded; so each request is written at the instant its `ConnectionRate` recorded.
final class APNsConnectionPool: Sendable {
    /// A connection that answered, or lived this long, counts as healthy: its successor
    /// connects without backoff. One that died younger and silent counts as a failure, so
    /// a server that accepts and drops connections is not hammered.
    static let healthyLifetime: Duration = .seconds(10)

    private struct Waiter {
        let continuation: CheckedContinuation<Void, Never>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var slots: [PoolSlot]
        var started = false
        var shuttingDown = false
        /// Bumped whenever a connection is installed, a stream is freed, a stream limit
        /// changes, or shutdown begins: a request that found nothing waits for a new one.
        var generation = 0
        var waiters: [Int: Waiter] = [:]
        /// Waiter ids in arrival order (ids already woken are skipped): a freed stream
        /// wakes the longest waiting request only.
        var waitOrder: [Int] = []
        var waitOrderHead = 0
        /// One request sleeps until the next rate-limit instant; see `lease`.
        var rateSleeperActive = false
        var nextWaiterID = 0
        var keepers: [Task<Void, Never>] = []
        var startWaiters: [CheckedContinuation<Void, Never>] = []
        var lastConnectError: String?
        var activeRequests = 0
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        /// The last provider token APNs refused: a request that read it just before the
        /// renewal must not take it to a fresh connection.
        var refusedJWT: String?
    }

    let endpoint: APNsEndpoint
    private let transport: HTTP2Client
    private let connectionConfiguration: HTTP2ClientConfiguration
    private let backoff: ReconnectBackoff
    private let localStreamCap: Int
    private let oneStreamUntilFirstAnswer: Bool
    private let statistics: StatisticsRecorder
    private let state: Locked<State>
    private let clock = ContinuousClock()

    init(endpoint: APNsEndpoint, connections: Int, ratePerConnection: Int?, backoff: ReconnectBackoff,
         transport: HTTP2Client, connectionConfiguration: HTTP2ClientConfiguration, statistics: StatisticsRecorder) {
        self.endpoint = endpoint
        self.transport = transport
        self.connectionConfiguration = connectionConfiguration
        self.backoff = backoff
        self.statistics = statistics
        localStreamCap = connectionConfiguration.maxConcurrentStreams
        oneStreamUntilFirstAnswer = connectionConfiguration.singleStreamUntilFirstResponse
        state = Locked(State(slots: (0..<connections).map { _ in PoolSlot(ratePerConnection: ratePerConnection) }))
    }

    var lastConnectError: String? { state.withLock { $0.lastConnectError } }
    var liveConnections: Int { state.withLock { state in state.slots.count { $0.connection != nil } } }
    /// Connections whose rate is lowered because 429s spread.
    var throttledConnections: Int { state.withLock { state in state.slots.count { $0.throttle?.isThrottled == true } } }
    var isShuttingDown: Bool { state.withLock { $0.shuttingDown } }

    // MARK: starting

    /// Starts the keepers (once) and returns when every slot's first connect attempt ended.
    func start() async {
        startKeepersIfNeeded()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.shuttingDown || state.slots.allSatisfy(\.firstAttemptDone) { return true }
                state.startWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    func startKeepersIfNeeded() {
        state.withLock { state in
            guard !state.started, !state.shuttingDown else { return }
            state.started = true
            for slot in state.slots.indices {
                state.keepers.append(Task { [self] in await keep(slot: slot) })
            }
        }
    }

    // MARK: leasing

    /// The best connection for a request that is to be written now: one with a free stream
    /// whose rate limiter allows a send now (the instant is recorded), preferring the least
    /// loaded. A slot named in `avoiding` (where the request just failed) is taken only when
    /// nothing else is.
    ///
    /// Only a send that goes out at once is recorded, so the limiter's window holds real
    /// send instants. When streams are free but rates are used up, one waiting request (the
    /// "rate sleeper") sleeps until the exact instant the first limiter frees; the others
    /// wait in line, and each granted lease wakes the next, so a backlog costs one wake-up
    /// per send rather than one per waiting request. `wasRateSleeper`: the caller held that
    /// role and is back to try again.
    ///
    /// `token`: the provider token the request will carry, read just before this call. Only
    /// a connection without a token or with this one takes it; a connection that carries an
    /// older token is retired here (its streams finish, the keeper replaces it), so a
    /// renewed token never meets a connection that saw another.
    func lease(avoiding avoided: Int? = nil, wasRateSleeper: Bool = false, token: ProviderToken? = nil) -> LeaseAttempt {
        var stale: [(slot: Int, connection: HTTP2ClientConnection)] = []
        let (attempt, next) = state.withLock { state -> (LeaseAttempt, Waiter?) in
            // Read under the lock: a lease must record the instant it was granted, not the
            // instant its caller started waiting for the lock.
            let now = clock.now
            if wasRateSleeper { state.rateSleeperActive = false }
            if state.shuttingDown { return (.shutDown, nil) }
            if let token, token.jwt == state.refusedJWT { return (.tokenRefused, nil) }
            var best: (slot: Int, start: ContinuousClock.Instant, load: Int, avoided: Bool)?
            for index in state.slots.indices {
                let slot = state.slots[index]
                guard let connection = slot.connection, connection.status.acceptsRequests else { continue }
                if let token, let carried = slot.token, carried != token {
                    if carried.issuedAt <= token.issuedAt { stale.append((index, connection)) }
                    continue
                }
                guard slot.inFlight < slot.streamLimit(localCap: localStreamCap, oneStreamUntilFirstAnswer: oneStreamUntilFirstAnswer)
                else { continue }
                let candidate = (slot: index, start: slot.rate.earliestStart(at: now), load: slot.inFlight,
                                 avoided: index == avoided)
                guard let current = best else { best = candidate; continue }
                if Self.isBetter(candidate, than: current, now: now) { best = candidate }
            }
            guard let best, let connection = state.slots[best.slot].connection else {
                return (.unavailable(generation: state.generation, rateLimited: false), nil)
            }
            guard best.start <= now else {
                if state.rateSleeperActive { return (.unavailable(generation: state.generation, rateLimited: true), nil) }
                state.rateSleeperActive = true
                return (.rateLimited(until: best.start, generation: state.generation), nil)
            }
            state.slots[best.slot].inFlight += 1
            state.slots[best.slot].rate.record(at: now)
            if state.slots[best.slot].token == nil { state.slots[best.slot].token = token }
            let lease = ConnectionLease(slot: best.slot, connection: connection)
            // Pass the turn on: the next waiting request either finds room too or becomes
            // the rate sleeper.
            return (.leased(lease), Self.takeLongestWaiter(&state))
        }
        if let next { Self.wake([next]) }
        retire(stale)
        return attempt
    }

    /// A rate sleeper that gives up (its deadline passed) hands the role to the next in line.
    func resignRateSleeper() {
        let next = state.withLock { state -> Waiter? in
            state.rateSleeperActive = false
            return Self.takeLongestWaiter(&state)
        }
        if let next { Self.wake([next]) }
    }

    /// Not avoided first; then sendable now (or freeing first); then least loaded.
    private static func isBetter(_ candidate: (slot: Int, start: ContinuousClock.Instant, load: Int, avoided: Bool),
                                 than current: (slot: Int, start: ContinuousClock.Instant, load: Int, avoided: Bool),
                                 now: ContinuousClock.Instant) -> Bool {
        if candidate.avoided != current.avoided { return !candidate.avoided }
        let candidateStart = max(candidate.start, now)
        let currentStart = max(current.start, now)
        if candidateStart != currentStart { return candidateStart < currentStart }
        return candidate.load < current.load
    }

    /// Waits until the pool changes after `generation` (a connection came up, a stream was
    /// freed, a stream limit rose, or shutdown), or until `deadline`.
    func waitForChange(after generation: Int, until deadline: ContinuousClock.Instant) async {
        guard clock.now < deadline, !Task.isCancelled else { return }
        let id = state.withLock { state -> Int in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let registered = state.withLock { state -> Bool in
                    if state.generation != generation || state.shuttingDown { return false }
                    state.waiters[id] = Waiter(continuation: continuation, timer: nil)
                    state.waitOrder.append(id)
                    return true
                }
                guard registered else {
                    continuation.resume()
                    return
                }
                let timer = Task { [self] in
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    expireWaiter(id)
                }
                let orphaned = state.withLock { state -> Bool in
                    guard state.waiters[id] != nil else { return true }
                    state.waiters[id]?.timer = timer
                    return false
                }
                if orphaned { timer.cancel() }
                // A cancellation that came before the waiter was registered found nothing to end.
                if Task.isCancelled { expireWaiter(id) }
            }
        } onCancel: {
            expireWaiter(id)
        }
    }

    private func expireWaiter(_ id: Int) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.timer?.cancel()
        waiter?.continuation.resume()
    }

    private static func takeWaiters(_ state: inout State) -> [Waiter] {
        let waiters = Array(state.waiters.values)
        state.waiters.removeAll()
        state.waitOrder.removeAll(keepingCapacity: true)
        state.waitOrderHead = 0
        return waiters
    }

    private static func takeLongestWaiter(_ state: inout State) -> Waiter? {
        defer {
            if state.waitOrderHead == state.waitOrder.count {
                state.waitOrder.removeAll(keepingCapacity: true)
                state.waitOrderHead = 0
            } else if state.waitOrderHead > 1024 && state.waitOrderHead * 2 > state.waitOrder.count {
                state.waitOrder.removeFirst(state.waitOrderHead)
                state.waitOrderHead = 0
            }
        }
        while state.waitOrderHead < state.waitOrder.count {
            let id = state.waitOrder[state.waitOrderHead]
            state.waitOrderHead += 1
            if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
        }
        return nil
    }

    private static func wake(_ waiters: [Waiter]) {
        for waiter in waiters {
            waiter.timer?.cancel()
            waiter.continuation.resume()
        }
    }

    /// Ends a lease. `answered`: an HTTP answer arrived; `throttled`: it was 429
    /// TooManyRequests. Answers feed the slot's throttle, which may change the slot's rate.
    func finish(_ lease: ConnectionLease, answered: Bool, throttled: Bool) {
        let now = clock.now
        let freed = state.withLock { state -> [Waiter] in
            let current = state.slots[lease.slot].connection === lease.connection
            var freed: [Waiter] = []
            if current {
                state.slots[lease.slot].inFlight -= 1
                let firstAnswer = answered && !state.slots[lease.slot].answeredSinceConnect
                if answered { state.slots[lease.slot].answeredSinceConnect = true }
                state.generation += 1
                // The first answer of a token connection opens it to many streams. The even
                // schedule starts afresh from here: the wait for this answer is no backlog
                // to catch up on, and a catch-up clump now would recur every second at
                // the transport's window.
                if firstAnswer && oneStreamUntilFirstAnswer {
                    state.slots[lease.slot].rate.restartSchedule(at: now)
                    freed = Self.takeWaiters(&state)
                } else if let waiter = Self.takeLongestWaiter(&state) {
                    freed = [waiter]
                }
            }
            guard answered, var throttle = state.slots[lease.slot].throttle else { return freed }
            let change = throttle.record(tooManyRequests: throttled, at: now)
            state.slots[lease.slot].throttle = throttle
            if let change { state.slots[lease.slot].rate.setLimit(change) }
            return freed
        }
        Self.wake(freed)
    }

    /// Takes the lease's connection out of the pool and closes it gracefully (its other
    /// streams finish); the keeper connects a replacement at once.
    func retire(_ lease: ConnectionLease) {
        retire([(lease.slot, lease.connection)])
    }

    /// Retires every connection that carries the provider token `jwt`: after APNs refused
    /// it, each request written with it would be refused too.
    func retireConnections(carrying jwt: String) {
        let carrying = state.withLock { state -> [(slot: Int, connection: HTTP2ClientConnection)] in
            state.refusedJWT = jwt
            return state.slots.indices.compactMap { index in
                guard let connection = state.slots[index].connection, state.slots[index].token?.jwt == jwt else { return nil }
                return (index, connection)
            }
        }
        retire(carrying)
    }

    private func retire(_ connections: [(slot: Int, connection: HTTP2ClientConnection)]) {
        for (slot, connection) in connections {
            connectionStopped(slot: slot, connection: connection)
            connection.close(graceful: true)
        }
    }

    // MARK: keeping connections

    private func keep(slot: Int) async {
        var failures = 0
        var connectedBefore = false
        while !Task.isCancelled && !isShuttingDown {
            if failures > 0 {
                try? await Task.sleep(for: backoff.delay(afterFailures: failures))
                if Task.isCancelled || isShuttingDown { break }
            }
            let connection: HTTP2ClientConnection
            do {
                connection = try await transport.connect(host: endpoint.host, port: endpoint.port, configuration: connectionConfiguration)
            } catch {
                if error == .clientShutDown { break }
                failures += 1
                connectFailed(slot: slot, error: error)
                continue
            }
            guard install(connection, slot: slot, isReconnect: connectedBefore) else {
                connection.close(graceful: false)
                break
            }
            connectedBefore = true
            Task { [self] in await watch(connection, slot: slot) }
            let healthy = await replacementNeeded(slot: slot, connection: connection)
            failures = healthy ? 0 : failures + 1
        }
    }

    private func connectFailed(slot: Int, error: ConnectError) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.lastConnectError = error.description
            return Self.markFirstAttemptDone(slot: slot, &state)
        }
        statistics.update { $0.connectFailures += 1 }
        for waiter in waiters { waiter.resume() }
    }

    private static func markFirstAttemptDone(slot: Int, _ state: inout State) -> [CheckedContinuation<Void, Never>] {
        state.slots[slot].firstAttemptDone = true
        guard state.slots.allSatisfy(\.firstAttemptDone) else { return [] }
        defer { state.startWaiters.removeAll() }
        return state.startWaiters
    }

    private func install(_ connection: HTTP2ClientConnection, slot: Int, isReconnect: Bool) -> Bool {
        let now = clock.now
        let outcome = state.withLock { state -> (installed: Bool, waiters: [Waiter], starters: [CheckedContinuation<Void, Never>]) in
            guard !state.shuttingDown else { return (false, [], []) }
            state.slots[slot].connection = connection
            state.slots[slot].connectedAt = now
            state.slots[slot].answeredSinceConnect = false
            state.slots[slot].token = nil
            state.slots[slot].inFlight = 0
            state.generation += 1
            let starters = Self.markFirstAttemptDone(slot: slot, &state)
            return (true, Self.takeWaiters(&state), starters)
        }
        guard outcome.installed else { return false }
        statistics.update {
            $0.connectionsOpened += 1
            if isReconnect { $0.reconnects += 1 }
        }
        Self.wake(outcome.waiters)
        for starter in outcome.starters { starter.resume() }
        return true
    }

    /// Follows a connection's events; it stops taking requests at GOAWAY or close. Holding
    /// the handle here keeps a draining connection alive until its last stream is done.
    private func watch(_ connection: HTTP2ClientConnection, slot: Int) async {
        for await event in connection.events {
            switch event {
            case .goAwayReceived, .closed:
                connectionStopped(slot: slot, connection: connection)
            case .ready, .maxConcurrentStreamsChanged:
                streamLimitChanged(slot: slot, connection: connection)
            }
        }
        connectionStopped(slot: slot, connection: connection)
    }

    private func streamLimitChanged(slot: Int, connection: HTTP2ClientConnection) {
        let waiters = state.withLock { state -> [Waiter] in
            guard state.slots[slot].connection === connection else { return [] }
            state.generation += 1
            return Self.takeWaiters(&state)
        }
        Self.wake(waiters)
    }

    private func connectionStopped(slot: Int, connection: HTTP2ClientConnection) {
        let now = clock.now
        let outcome = state.withLock { state -> (waiter: CheckedContinuation<Bool, Never>?, healthy: Bool, live: Int)? in
            guard state.slots[slot].connection === connection else { return nil }
            let lived = state.slots[slot].connectedAt.map { $0.duration(to: now) } ?? .zero
            let healthy = state.slots[slot].answeredSinceConnect || lived >= Self.healthyLifetime
            state.slots[slot].connection = nil
            state.slots[slot].connectedAt = nil
            state.slots[slot].inFlight = 0
            state.slots[slot].lastConnectionWasHealthy = healthy
            let waiter = state.slots[slot].replacementWaiter
            state.slots[slot].replacementWaiter = nil
            return (waiter, healthy, state.slots.count { $0.connection != nil })
        }
        guard let outcome else { return }
        outcome.waiter?.resume(returning: outcome.healthy)
    }

    /// Returns once `connection` no longer fills `slot`: whether it was healthy.
    private func replacementNeeded(slot: Int, connection: HTTP2ClientConnection) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let finished = state.withLock { state -> Bool? in
                guard state.slots[slot].connection === connection, !state.shuttingDown else {
                    return state.slots[slot].lastConnectionWasHealthy
                }
                state.slots[slot].replacementWaiter = continuation
                return nil
            }
            if let finished { continuation.resume(returning: finished) }
        }
    }

    // MARK: requests in flight and shutdown

    /// Counts a request in; false once shutdown has begun.
    func admit() -> Bool {
        state.withLock { state in
            guard !state.shuttingDown else { return false }
            state.activeRequests += 1
            return true
        }
    }

    func leave() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.activeRequests -= 1
            guard state.activeRequests == 0 else { return [] }
            defer { state.idleWaiters.removeAll() }
            return state.idleWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Stops new requests, lets those in flight finish until `timeout`, then closes every
    /// connection (requests still open fail as "may have been processed") and the transport.
    func shutdown(timeout: Duration) async {
        let outcome = state.withLock { state -> (first: Bool, waiters: [Waiter], starters: [CheckedContinuation<Void, Never>]) in
            guard !state.shuttingDown else { return (false, [], []) }
            state.shuttingDown = true
            state.generation += 1
            defer { state.startWaiters.removeAll() }
            return (true, Self.takeWaiters(&state), state.startWaiters)
        }
        Self.wake(outcome.waiters)
        for starter in outcome.starters { starter.resume() }
        await waitUntilIdle(until: clock.now.advanced(by: timeout))
        let (keepers, connections, replacementWaiters) = state.withLock { state in
            let keepers = state.keepers
            state.keepers.removeAll()
            let connections = state.slots.compactMap(\.connection)
            var waiters: [CheckedContinuation<Bool, Never>] = []
            for index in state.slots.indices {
                if let waiter = state.slots[index].replacementWaiter { waiters.append(waiter) }
                state.slots[index].replacementWaiter = nil
                state.slots[index].connection = nil
            }
            return (keepers, connections, waiters)
        }
        for keeper in keepers { keeper.cancel() }
        for waiter in replacementWaiters { waiter.resume(returning: true) }
        for connection in connections { connection.close(graceful: false) }
        transport.shutdown()
    }

    private func waitUntilIdle(until deadline: ContinuousClock.Instant) async {
        let idle = state.withLock { $0.activeRequests == 0 }
        if idle { return }
        // Woken by the last request to leave, or by the timer at the deadline.
        let timer = Task { [self] in
            try? await Task.sleep(until: deadline, clock: .continuous)
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                defer { state.idleWaiters.removeAll() }
                return state.idleWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.activeRequests == 0 || clock.now >= deadline { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        timer.cancel()
    }
}
