import HTTP2TLS
import PGPushCore
import Locking

/// Keeps one app's HTTP/2 connections to one service open and hands them out to requests.
///
/// Each slot has a keeper task that connects, waits until the connection stops taking
/// requests (GOAWAY, close, or retired after an auth error), and connects again: at once
/// after a healthy connection, otherwise after the reconnect backoff with jitter. The
/// transport resolves DNS afresh at each connect.
///
/// Requests wait here, not in the transport's queue, until a connection has a free stream
/// and rate to spare, then go to the connection that can send soonest, then to the least
/// loaded; so each request is written at the instant its `ConnectionRate` recorded.
///
/// Every such decision is `PoolStateMachine`'s. This class owns what the machine only
/// names: the lock, the continuations of those who wait, their timers, the keeper tasks,
/// the connections and the transport; it feeds the machine events and carries out the
/// actions it returns.
package final class ConnectionPool: Sendable {
    package typealias Machine = PoolStateMachine<HTTP2ClientConnection>
    package typealias KeeperStep = Machine.KeeperStep

    private struct Waiter: Sendable {
        let continuation: CheckedContinuation<Void, Never>
        var timer: Task<Void, Never>?
    }

    /// The machine and the continuations its actions resume, under one lock: a caller's
    /// continuation is stored in the same critical section as the decision that it waits,
    /// so no wake-up can fall between the two.
    private struct Shared {
        var machine: Machine
        var waiters: [Machine.WaiterID: Waiter] = [:]
        var startWaiters: [CheckedContinuation<Void, Never>] = []
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        /// By slot: the keeper waiting for its connection to stop taking requests.
        var keepers: [Int: CheckedContinuation<KeeperStep, Never>] = [:]
        var keeperTasks: [Task<Void, Never>] = []

        /// Takes out what `actions` names, to be carried out once the lock is released.
        mutating func take(_ actions: Machine.Actions) -> Work {
            var work = Work(close: actions.close)
            if actions.cancelKeeperTasks { swap(&work.keeperTasks, &keeperTasks) }
            work.waiters = actions.resumeWaiters.compactMap { waiters.removeValue(forKey: $0) }
            if actions.resumeStartWaiters { swap(&work.startWaiters, &startWaiters) }
            work.keepers = actions.resumeKeepers.compactMap { slot, step in
                keepers.removeValue(forKey: slot).map { ($0, step) }
            }
            if actions.resumeIdleWaiters { swap(&work.idleWaiters, &idleWaiters) }
            return work
        }
    }

    /// One event's actions, carried out outside the lock in the order the machine gives.
    private struct Work: Sendable {
        var close: [(connection: HTTP2ClientConnection, graceful: Bool)]
        var keeperTasks: [Task<Void, Never>] = []
        var waiters: [Waiter] = []
        var startWaiters: [CheckedContinuation<Void, Never>] = []
        var keepers: [(CheckedContinuation<KeeperStep, Never>, KeeperStep)] = []
        var idleWaiters: [CheckedContinuation<Void, Never>] = []

        func run() {
            for task in keeperTasks { task.cancel() }
            for waiter in waiters {
                waiter.timer?.cancel()
                waiter.continuation.resume()
            }
            for waiter in startWaiters { waiter.resume() }
            for (keeper, step) in keepers { keeper.resume(returning: step) }
            for (connection, graceful) in close { connection.close(graceful: graceful) }
            for waiter in idleWaiters { waiter.resume() }
        }
    }

    package let endpoint: ServiceAddress
    private let transport: HTTP2Client
    private let connectionConfiguration: HTTP2ClientConfiguration
    private let backoff: ReconnectBackoff
    private let statistics: StatisticsRecorder
    private let shared: Locked<Shared>
    /// Told of every connection failure, outside the pool's lock (the worker logs and counts them).
    private let failureObserver = Locked<(@Sendable (ConnectionFailure) -> Void)?>(nil)

    package init(endpoint: ServiceAddress, connections: Int, ratePerConnection: Int?, backoff: ReconnectBackoff,
         transport: HTTP2Client, connectionConfiguration: HTTP2ClientConfiguration, statistics: StatisticsRecorder) {
        self.endpoint = endpoint
        self.transport = transport
        self.connectionConfiguration = connectionConfiguration
        self.backoff = backoff
        self.statistics = statistics
        shared = Locked(Shared(machine: Machine(
            connections: connections, ratePerConnection: ratePerConnection,
            oneStreamUntilFirstAnswer: connectionConfiguration.singleStreamUntilFirstResponse)))
    }

    package var lastConnectError: String? { shared.withLock { $0.machine.lastConnectError } }
    package var lastConnectFailure: ConnectionFailure? { shared.withLock { $0.machine.lastConnectFailure } }
    package var liveConnections: Int { shared.withLock { $0.machine.liveConnections } }
    /// Connections whose rate is lowered because 429s spread.
    package var throttledConnections: Int { shared.withLock { $0.machine.throttledConnections } }
    package var isShuttingDown: Bool { shared.withLock { $0.machine.isShuttingDown } }

    /// Feeds the machine one event under the lock, then carries out its actions.
    private func handle<Result: Sendable>(_ event: (inout Machine) -> (Result, Machine.Actions)) -> Result {
        let (result, work) = shared.withLock { shared -> (Result, Work) in
            let (result, actions) = event(&shared.machine)
            return (result, shared.take(actions))
        }
        work.run()
        return result
    }

    private func handle(_ event: (inout Machine) -> Machine.Actions) {
        handle { machine in ((), event(&machine)) }
    }

    // MARK: starting

    /// Starts the keepers (once) and returns when every slot's first connect attempt ended.
    package func start() async {
        startKeepersIfNeeded()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waits = shared.withLock { shared -> Bool in
                guard shared.machine.startMustWait else { return false }
                shared.startWaiters.append(continuation)
                return true
            }
            if !waits { continuation.resume() }
        }
    }

    package func startKeepersIfNeeded() {
        shared.withLock { shared in
            for slot in shared.machine.startKeepers() {
                shared.keeperTasks.append(Task { [self] in await keep(slot: slot) })
            }
        }
    }

    // MARK: leasing

    /// The best connection for a request to be written now; see `PoolStateMachine.lease`.
    /// `token`: the provider token the request will carry, read just before this call.
    package func lease(avoiding avoided: Int? = nil, wasRateSleeper: Bool = false, token: ConnectionCredential? = nil) -> LeaseAttempt {
        handle { machine in
            // Read under the lock: a lease must record the instant it was granted, not the
            // instant its caller started waiting for the lock.
            machine.lease(at: PoolInstant.now, avoiding: avoided, wasRateSleeper: wasRateSleeper, token: token) { connection in
                let status = connection.status
                return .init(acceptsRequests: status.acceptsRequests, streamLimit: status.streamLimit)
            }
        }
    }

    /// A rate sleeper that gives up (its deadline passed) hands the role to the next in line.
    /// A stream to write the next try on now, and the credential to write it with (read
    /// again on each turn, so a request that waited through a renewal never carries a refused
    /// one). Waits for a free stream and the rate for as long as it takes while a connection is
    /// open: each stream frees within the request timeout and the rate frees on schedule, so
    /// the wait ends; how much to queue is the caller's choice. Without any open connection it
    /// waits up to `requestTimeout`, then gives up with `couldNotConnect` (the request was
    /// never written). `carrying`: what a connection carries of the credential for its life;
    /// nil when connections carry none. `rateWait`: set to how long the request waited for
    /// the rate limit, if it did. `lane`: the row's; requests waiting here take turns lane by
    /// lane (`WaiterQueue`).
    package func acquire<Credential>(lane: Lane, avoiding avoided: Int?, requestTimeout: Duration,
                                     credential: () -> Result<Credential?, DeliveryFailure> = { .success(nil) },
                                     carrying: ((Credential) -> ConnectionCredential)? = nil,
                                     rateWait: inout Duration?) async -> Result<(ConnectionLease, Credential?), DeliveryFailure> {
        var deadline = PoolInstant.now.advanced(by: requestTimeout)
        var rateSleeper = false
        var rateWaitBegan: PoolInstant?
        while true {
            let current: Credential?
            switch credential() {
            case .success(let read): current = read
            case .failure(let failure):
                if rateSleeper { resignRateSleeper() }
                return .failure(failure)
            }
            let attempt = lease(avoiding: avoided, wasRateSleeper: rateSleeper,
                                token: current.flatMap { value in carrying.map { $0(value) } })
            rateSleeper = false
            if case .leased(let lease) = attempt {
                rateWait = rateWaitBegan.map { $0.duration(to: PoolInstant.now) }
                return .success((lease, current))
            }
            if case .shutDown = attempt {
                return .failure(DeliveryFailure(processing: .notProcessed, cause: .clientShutDown, detail: "the client is shut down"))
            }
            if case .tokenRefused = attempt { continue }
            if Task.isCancelled {
                if case .rateLimited = attempt { resignRateSleeper() }
                return .failure(DeliveryFailure(processing: .notProcessed, cause: .clientShutDown,
                                                detail: "the sending task was cancelled before the request was written"))
            }
            let now = PoolInstant.now
            if liveConnections > 0 {
                deadline = now.advanced(by: requestTimeout)
            } else if let failure = lastConnectFailure, let lasting = failure.lastingCause {
                // Not worth the wait: the host's addresses will not become permitted, nor will
                // a proxy let through what it refused.
                if case .rateLimited = attempt { resignRateSleeper() }
                return .failure(DeliveryFailure(processing: .notProcessed, cause: lasting, detail: "\(endpoint) \(failure.reason)"))
            } else if now >= deadline {
                if case .rateLimited = attempt { resignRateSleeper() }
                let why = lastConnectError.map { ": \($0)" } ?? ""
                return .failure(DeliveryFailure(processing: .notProcessed, cause: .couldNotConnect,
                                                detail: "no connection to \(endpoint) within \(requestTimeout)\(why)"))
            }
            switch attempt {
            case .rateLimited(let until, let generation):
                rateSleeper = true
                if rateWaitBegan == nil { rateWaitBegan = now }
                await waitForChange(lane: lane, after: generation, until: min(until, deadline))
            case .unavailable(let generation, let rateLimited):
                if rateLimited && rateWaitBegan == nil { rateWaitBegan = now }
                await waitForChange(lane: lane, after: generation, until: deadline)
            case .leased, .shutDown, .tokenRefused:
                break
            }
        }
    }

    /// Writes `request` on the leased connection and waits for its answer; counts the request
    /// (and its wait for the rate, if it had one) in the sender's statistics.
    package func send(_ request: HTTP2Request, on lease: ConnectionLease,
                      rateWait: Duration?) async -> Result<HTTP2Response, RequestFailure> {
        let outcome: Result<HTTP2Response, RequestFailure>
        do throws(RequestFailure) {
            outcome = .success(try await lease.connection.send(request))
        } catch {
            outcome = .failure(error)
        }
        statistics.update {
            $0.requestsSent += 1
            if let rateWait {
                $0.rateLimiterWaits += 1
                $0.rateLimiterWaitTime += rateWait
            }
            if case .success(let response) = outcome { $0.answersByStatus[response.status, default: 0] += 1 }
        }
        return outcome
    }

    /// A request's failure on one of this pool's connections, in the senders' words: the
    /// cause, whether the service may have processed it, and the GOAWAY's reason if one
    /// ended the connection. A connection this pool closed while shutting down is the
    /// client's shutdown, not a lost connection.
    package func deliveryFailure(_ failure: RequestFailure) -> DeliveryFailure {
        let cause: DeliveryFailure.Cause
        var goAwayReason: String?
        switch failure.cause {
        case .goAway(let goAway), .connectionClosed(.goAway(let goAway)): goAwayReason = goAway.reason
        default: break
        }
        switch failure.cause {
        case .refusedStream: cause = .refusedStream
        case .goAway: cause = .goAway
        case .deadlineExceeded: cause = .deadlineExceeded
        case .connectionClosed(.closedLocally) where isShuttingDown: cause = .clientShutDown
        case .connectionClosed: cause = .connectionLost
        case .streamReset: cause = .streamReset
        case .responseTooLarge: cause = .responseTooLarge
        case .invalidRequest: cause = .invalidRequest
        case .cancelled: cause = .clientShutDown
        }
        return DeliveryFailure(processing: failure.processing, cause: cause, serviceReason: goAwayReason, detail: failure.description)
    }

    package func resignRateSleeper() {
        handle { $0.resignRateSleeper() }
    }

    /// Waits until the pool changes after `generation` (a connection came up, a stream was
    /// freed, a stream limit rose, or shutdown) and it is this lane's turn, or until `deadline`.
    package func waitForChange(lane: Lane, after generation: Int, until deadline: PoolInstant) async {
        guard !Task.isCancelled else { return }
        let id = shared.withLock { $0.machine.makeWaiterID() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let decision = shared.withLock { shared -> Machine.WaitDecision in
                    let decision = shared.machine.waitForChange(id, lane: lane, after: generation, until: deadline, at: PoolInstant.now)
                    if case .wait = decision { shared.waiters[id] = Waiter(continuation: continuation) }
                    return decision
                }
                guard case .wait(let until) = decision else {
                    continuation.resume()
                    return
                }
                let timer = Task { [self] in
                    try? await Task.sleep(until: until.continuous, clock: .continuous)
                    handle { $0.waiterGaveUp(id) }
                }
                let orphaned = shared.withLock { shared -> Bool in
                    guard shared.waiters[id] != nil else { return true }
                    shared.waiters[id]?.timer = timer
                    return false
                }
                if orphaned { timer.cancel() }
                // A cancellation that came before the waiter was registered found nothing to end.
                if Task.isCancelled { handle { $0.waiterGaveUp(id) } }
            }
        } onCancel: {
            handle { $0.waiterGaveUp(id) }
        }
    }

    /// Ends a lease. `answered`: an HTTP answer arrived; `throttled`: it was 429
    /// TooManyRequests.
    package func finish(_ lease: ConnectionLease, answered: Bool, throttled: Bool) {
        handle { $0.finish(lease, answered: answered, throttled: throttled, at: PoolInstant.now) }
    }

    /// Takes the lease's connection out of the pool and closes it gracefully (its other
    /// streams finish); the keeper connects a replacement at once.
    package func retire(_ lease: ConnectionLease) {
        handle { $0.retire(lease, at: PoolInstant.now) }
    }

    /// Retires every connection that carries the provider token `jwt`: after APNs refused
    /// it, each request written with it would be refused too.
    package func retireConnections(carrying jwt: String) {
        handle { $0.retireConnections(carrying: jwt, at: PoolInstant.now) }
    }

    // MARK: keeping connections

    private func keep(slot: Int) async {
        var step = KeeperStep.connect(afterFailures: 0)
        while case .connect(let failures) = step {
            if failures > 0 { try? await Task.sleep(for: backoff.delay(afterFailures: failures)) }
            guard !Task.isCancelled, shared.withLock({ $0.machine.connectAttemptBegins(slot: slot) }) else { return }
            let connection: HTTP2ClientConnection
            do {
                connection = try await transport.connect(host: endpoint.host, port: endpoint.port, configuration: connectionConfiguration)
            } catch {
                guard let failure = ConnectionFailure(endpoint: endpoint.hostAndPort, error: error) else { return }
                report(failure)
                step = handle { $0.connectFailed(slot: slot, failure: failure) }
                continue
            }
            guard install(connection, slot: slot) else {
                connection.close(graceful: false)
                return
            }
            Task { [self] in await watch(connection, slot: slot) }
            step = await replacementNeeded(slot: slot, connection: connection)
        }
    }

    /// False when the pool is shutting down and the connection is not wanted.
    private func install(_ connection: HTTP2ClientConnection, slot: Int) -> Bool {
        let installed = shared.withLock { shared -> (isReconnect: Bool, work: Work)? in
            guard case .installed(let isReconnect, let actions) = shared.machine.connected(connection, slot: slot, at: PoolInstant.now)
            else { return nil }
            return (isReconnect, shared.take(actions))
        }
        guard let installed else { return false }
        statistics.update {
            $0.connectionsOpened += 1
            if installed.isReconnect { $0.reconnects += 1 }
        }
        installed.work.run()
        return true
    }

    /// Follows a connection's events; it stops taking requests at GOAWAY or close. Holding
    /// the handle here keeps a draining connection alive until its last stream is done.
    private func watch(_ connection: HTTP2ClientConnection, slot: Int) async {
        for await event in connection.events {
            switch event {
            case .closed(let reason):
                if let failure = ConnectionFailure(endpoint: endpoint.hostAndPort, closeReason: reason) {
                    report(failure)
                }
                handle { $0.connectionStopped(slot: slot, connection: connection, at: PoolInstant.now) }
            case .goAwayReceived:
                handle { $0.connectionStopped(slot: slot, connection: connection, at: PoolInstant.now) }
            case .ready, .maxConcurrentStreamsChanged:
                handle { $0.streamLimitChanged(slot: slot, connection: connection) }
            }
        }
        handle { $0.connectionStopped(slot: slot, connection: connection, at: PoolInstant.now) }
    }

    // MARK: failures

    /// `observer` is told of each connection failure from now on (one observer; a later one replaces it).
    package func onConnectionFailure(_ observer: @escaping @Sendable (ConnectionFailure) -> Void) {
        failureObserver.withLock { $0 = observer }
    }

    /// Counts a failure by cause (those at connect also as `connectFailures`) and tells the observer.
    private func report(_ failure: ConnectionFailure) {
        statistics.update {
            if failure.duringConnect { $0.connectFailures += 1 }
            $0.connectionFailuresByCause[failure.cause, default: 0] += 1
        }
        failureObserver.withLock { $0 }?(failure)
    }

    /// Returns once `connection` no longer fills `slot`: what the keeper does next.
    private func replacementNeeded(slot: Int, connection: HTTP2ClientConnection) async -> KeeperStep {
        await withCheckedContinuation { (continuation: CheckedContinuation<KeeperStep, Never>) in
            let step = shared.withLock { shared -> KeeperStep? in
                let step = shared.machine.keeperAwaitsReplacement(slot: slot, connection: connection)
                if step == nil { shared.keepers[slot] = continuation }
                return step
            }
            if let step { continuation.resume(returning: step) }
        }
    }

    // MARK: requests in flight and shutdown

    /// Counts a request in; false once shutdown has begun.
    package func admit() -> Bool {
        shared.withLock { $0.machine.admit() }
    }

    package func leave() {
        handle { $0.leave() }
    }

    /// Stops new requests, lets those in flight finish until `timeout`, then closes every
    /// connection (requests still open fail as "may have been processed") and, unless other
    /// pools share it (`closingTransport` false), the transport.
    package func shutdown(timeout: Duration, closingTransport: Bool = true) async {
        handle { $0.beginShutdown() }
        await waitUntilIdle(until: PoolInstant.now.advanced(by: timeout))
        handle { $0.finishShutdown() }
        if closingTransport { transport.shutdown() }
    }

    private func waitUntilIdle(until deadline: PoolInstant) async {
        let decision = shared.withLock { $0.machine.waitForIdle(until: deadline, at: PoolInstant.now) }
        guard case .wait(let until) = decision else { return }
        // Woken by the last request to leave, or by the timer at the deadline.
        let timer = Task { [self] in
            try? await Task.sleep(until: until.continuous, clock: .continuous)
            handle { $0.idleDeadlinePassed() }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waits = shared.withLock { shared -> Bool in
                guard case .wait = shared.machine.waitForIdle(until: deadline, at: PoolInstant.now) else { return false }
                shared.idleWaiters.append(continuation)
                return true
            }
            if !waits { continuation.resume() }
        }
        timer.cancel()
    }
}
