import PGPushCore
@testable import PushTransport
import Foundation
import Testing

/// Drives the pool's state machine with stand-in connections and instants advanced by
/// hand: no sockets, no sleeping.
@Suite("Pool state machine: waiting, choice, rate, reconnects, shutdown")
struct PoolStateMachineTests {
    final class FakeConnection: Sendable {}

    typealias Machine = PoolStateMachine<FakeConnection>

    private let origin = PoolInstant.now

    private func at(milliseconds: Int) -> PoolInstant {
        origin.advanced(by: .milliseconds(milliseconds))
    }

    private func machine(slots: Int, rate: Int? = nil, oneStreamUntilFirstAnswer: Bool = false) -> Machine {
        var machine = Machine(connections: slots, ratePerConnection: rate, oneStreamUntilFirstAnswer: oneStreamUntilFirstAnswer)
        #expect(machine.startKeepers() == 0..<slots)
        return machine
    }

    /// Fills `slot` with a new connection at `now`.
    @discardableResult
    private func connect(_ machine: inout Machine, slot: Int, at now: PoolInstant) -> FakeConnection {
        let connection = FakeConnection()
        let begins = machine.connectAttemptBegins(slot: slot)
        #expect(begins)
        guard case .installed = machine.connected(connection, slot: slot, at: now) else {
            Issue.record("connection refused")
            return connection
        }
        return connection
    }

    private func lease(_ machine: inout Machine, at now: PoolInstant, streams: Int = 10,
                       avoiding avoided: Int? = nil, wasRateSleeper: Bool = false, token: ConnectionCredential? = nil,
                       acceptsRequests: Bool = true) -> (Machine.LeaseAttempt, Machine.Actions) {
        machine.lease(at: now, avoiding: avoided, wasRateSleeper: wasRateSleeper, token: token) { _ in
            .init(acceptsRequests: acceptsRequests, streamLimit: streams)
        }
    }

    private func leased(_ attempt: Machine.LeaseAttempt) -> Machine.Lease? {
        if case .leased(let lease) = attempt { return lease }
        return nil
    }

    /// A request that found nothing registers as a waiter; its id.
    private func wait(_ machine: inout Machine, after attempt: Machine.LeaseAttempt,
                      at now: PoolInstant, lane: Lane = .normal) -> Machine.WaiterID? {
        guard case .unavailable(let generation, _) = attempt else {
            Issue.record("expected to find nothing, got \(attempt)")
            return nil
        }
        let id = machine.makeWaiterID()
        let deadline = now.advanced(by: .seconds(5))
        #expect(machine.waitForChange(id, lane: lane, after: generation, until: deadline, at: now) == .wait(until: deadline))
        return id
    }

    @Test("a request waits while no stream is free and is woken first come, first served")
    func waitersFIFO() throws {
        var pool = machine(slots: 1)
        let now = at(milliseconds: 0)
        connect(&pool, slot: 0, at: now)
        let first = try #require(leased(lease(&pool, at: now, streams: 1).0))
        let second = try #require(wait(&pool, after: lease(&pool, at: now, streams: 1).0, at: now))
        let third = try #require(wait(&pool, after: lease(&pool, at: now, streams: 1).0, at: now))
        #expect(pool.waitingRequests == 2)

        // A freed stream wakes the longest waiting request only.
        #expect(pool.finish(first, answered: true, throttled: false, at: now).resumeWaiters == [second])
        // The woken one leases and passes the turn on to the next.
        let (attempt, actions) = lease(&pool, at: now, streams: 1)
        #expect(leased(attempt) != nil)
        #expect(actions.resumeWaiters == [third])
        #expect(pool.waitingRequests == 0)
    }

    @Test("an urgent row's request is woken before normal and bulk ones that waited longer")
    func waitersByLane() throws {
        var pool = machine(slots: 1)
        let now = at(milliseconds: 0)
        connect(&pool, slot: 0, at: now)
        let held = try (0..<4).map { _ in try #require(leased(lease(&pool, at: now, streams: 4).0)) }
        let bulk = try #require(wait(&pool, after: lease(&pool, at: now, streams: 4).0, at: now, lane: .bulk))
        let normal = try #require(wait(&pool, after: lease(&pool, at: now, streams: 4).0, at: now, lane: .normal))
        let laterNormal = try #require(wait(&pool, after: lease(&pool, at: now, streams: 4).0, at: now, lane: .normal))
        let urgent = try #require(wait(&pool, after: lease(&pool, at: now, streams: 4).0, at: now, lane: .urgent))

        // Each freed stream wakes one waiter: urgent first, then normal in arrival order, bulk last.
        let woken = held.flatMap { pool.finish($0, answered: true, throttled: false, at: now).resumeWaiters }
        #expect(woken == [urgent, normal, laterNormal, bulk])
    }

    @Test("a waiter registering after the pool changed does not wait; one that gives up is not woken again")
    func staleGenerationAndGivingUp() throws {
        var pool = machine(slots: 1)
        let now = at(milliseconds: 0)
        connect(&pool, slot: 0, at: now)
        let held = try #require(leased(lease(&pool, at: now, streams: 1).0))
        guard case .unavailable(let generation, _) = lease(&pool, at: now, streams: 1).0 else {
            Issue.record("a second stream was granted on a one-stream connection")
            return
        }
        _ = pool.finish(held, answered: true, throttled: false, at: now)
        let late = pool.makeWaiterID()
        #expect(pool.waitForChange(late, lane: .normal, after: generation, until: at(milliseconds: 5000), at: now) == .proceed)

        #expect(leased(lease(&pool, at: now, streams: 1).0) != nil)
        let waiter = try #require(wait(&pool, after: lease(&pool, at: now, streams: 1).0, at: now))
        #expect(pool.waiterGaveUp(waiter).resumeWaiters == [waiter])
        #expect(pool.waiterGaveUp(waiter).resumeWaiters.isEmpty)
        #expect(pool.waitingRequests == 0)
    }

    @Test("the connection that can send soonest wins, then the least loaded; an avoided one comes last")
    func choice() throws {
        var pool = machine(slots: 2, rate: 10)
        connect(&pool, slot: 0, at: at(milliseconds: 0))
        connect(&pool, slot: 1, at: at(milliseconds: 0))
        let onZero = try #require(leased(lease(&pool, at: at(milliseconds: 0)).0))
        let onOne = try #require(leased(lease(&pool, at: at(milliseconds: 1)).0))
        #expect(onZero.slot == 0)
        #expect(onOne.slot == 1, "slot 0 waits out its pacing interval, slot 1 may send now")
        _ = pool.finish(onOne, answered: true, throttled: false, at: at(milliseconds: 2))

        // Slot 0 is busier but may send at 100.4 ms; slot 1 is idle but only at 101.4 ms.
        let soonest = try #require(leased(lease(&pool, at: at(milliseconds: 101)).0))
        #expect(soonest.slot == 0)
        // Once both may send, the least loaded wins.
        let leastLoaded = try #require(leased(lease(&pool, at: at(milliseconds: 250)).0))
        #expect(leastLoaded.slot == 1)
        // Avoiding slot 1 (where a request just failed) sends it to the busier slot 0.
        let avoided = try #require(leased(lease(&pool, at: at(milliseconds: 500), avoiding: 1).0))
        #expect(avoided.slot == 0)
    }

    @Test("a connection that stops taking requests is passed over")
    func drainingConnectionPassedOver() {
        var pool = machine(slots: 1)
        connect(&pool, slot: 0, at: at(milliseconds: 0))
        guard case .unavailable = lease(&pool, at: at(milliseconds: 0), acceptsRequests: false).0 else {
            Issue.record("leased a connection after its GOAWAY")
            return
        }
    }

    @Test("rate used up: one request sleeps until the next permitted instant, the rest wait in line")
    func rateSleeper() throws {
        var pool = machine(slots: 1, rate: 10)
        connect(&pool, slot: 0, at: at(milliseconds: 0))
        #expect(leased(lease(&pool, at: at(milliseconds: 0)).0) != nil)

        guard case .rateLimited(let until, _) = lease(&pool, at: at(milliseconds: 1)).0 else {
            Issue.record("a second send within the interval was not rate limited")
            return
        }
        #expect(until == at(milliseconds: 0) + ConnectionRate.window / 10)
        let second = lease(&pool, at: at(milliseconds: 2)).0
        guard case .unavailable(_, rateLimited: true) = second else {
            Issue.record("a second rate sleeper: \(second)")
            return
        }
        let inLine = try #require(wait(&pool, after: second, at: at(milliseconds: 2)))

        // Too early, the sleeper stays the sleeper (it is asked to sleep again).
        guard case .rateLimited = lease(&pool, at: at(milliseconds: 50), wasRateSleeper: true).0 else {
            Issue.record("the sleeper lost its role before the instant")
            return
        }
        let (attempt, actions) = lease(&pool, at: until, wasRateSleeper: true)
        #expect(leased(attempt) != nil)
        #expect(actions.resumeWaiters == [inLine], "the granted lease passes the turn on")
        #expect(!pool.rateSleeperActive)
    }

    @Test("a rate sleeper that gives up hands the role on")
    func rateSleeperResigns() throws {
        var pool = machine(slots: 1, rate: 10)
        connect(&pool, slot: 0, at: at(milliseconds: 0))
        _ = lease(&pool, at: at(milliseconds: 0))
        guard case .rateLimited = lease(&pool, at: at(milliseconds: 1)).0 else {
            Issue.record("not rate limited")
            return
        }
        let inLine = try #require(wait(&pool, after: lease(&pool, at: at(milliseconds: 2)).0, at: at(milliseconds: 2)))
        #expect(pool.resignRateSleeper().resumeWaiters == [inLine])
        guard case .rateLimited = lease(&pool, at: at(milliseconds: 3)).0 else {
            Issue.record("the next request did not become the rate sleeper")
            return
        }
    }

    @Test("reconnects: failures grow the backoff, a healthy connection (answered or long-lived) resets it")
    func reconnectBackoff() throws {
        var pool = machine(slots: 1)
        let refused = ConnectionFailure(endpoint: "127.0.0.1:443", cause: .tcpConnect, reason: "refused")
        #expect(pool.startMustWait)
        _ = pool.connectAttemptBegins(slot: 0)
        let (firstStep, firstActions) = pool.connectFailed(slot: 0, failure: refused)
        #expect(firstStep == .connect(afterFailures: 1))
        #expect(firstActions.resumeStartWaiters, "the first attempt ended: start() returns")
        #expect(!pool.startMustWait)
        #expect(pool.lastConnectFailure == refused)
        #expect(pool.lastConnectError == "127.0.0.1:443: refused")
        _ = pool.connectAttemptBegins(slot: 0)
        #expect(pool.connectFailed(slot: 0, failure: refused).0 == .connect(afterFailures: 2))

        // Connected, then dropped after a second without an answer: a third failure.
        let dropped = FakeConnection()
        _ = pool.connectAttemptBegins(slot: 0)
        guard case .installed(isReconnect: false, _) = pool.connected(dropped, slot: 0, at: at(milliseconds: 0)) else {
            Issue.record("first connection not installed as such")
            return
        }
        #expect(pool.liveConnections == 1)
        #expect(pool.keeperAwaitsReplacement(slot: 0, connection: dropped) == nil)
        let stopped = pool.connectionStopped(slot: 0, connection: dropped, at: at(milliseconds: 1000))
        #expect(stopped.resumeKeepers.map { $0.step } == [.connect(afterFailures: 3)])
        #expect(pool.liveConnections == 0)

        // Answered: healthy however short its life.
        _ = pool.connectAttemptBegins(slot: 0)
        let answered = FakeConnection()
        guard case .installed(isReconnect: true, _) = pool.connected(answered, slot: 0, at: at(milliseconds: 2000)) else {
            Issue.record("second connection not counted as a reconnect")
            return
        }
        let lease = try #require(leased(lease(&pool, at: at(milliseconds: 2000)).0))
        _ = pool.finish(lease, answered: true, throttled: false, at: at(milliseconds: 2100))
        // Stopped before its keeper waited: the keeper learns its step when it asks.
        #expect(pool.connectionStopped(slot: 0, connection: answered, at: at(milliseconds: 2200)).resumeKeepers.isEmpty)
        #expect(pool.keeperAwaitsReplacement(slot: 0, connection: answered) == .connect(afterFailures: 0))

        // Silent but alive for the healthy lifetime: healthy too.
        let longLived = connect(&pool, slot: 0, at: at(milliseconds: 3000))
        let later = at(milliseconds: 3000) + Machine.healthyLifetime
        _ = pool.connectionStopped(slot: 0, connection: longLived, at: later)
        #expect(pool.keeperAwaitsReplacement(slot: 0, connection: longLived) == .connect(afterFailures: 0))
    }

    @Test("a connection that stopped is not stopped again by a late event, nor freed by a late finish")
    func staleConnectionEvents() throws {
        var pool = machine(slots: 1)
        let old = connect(&pool, slot: 0, at: at(milliseconds: 0))
        let oldLease = try #require(leased(lease(&pool, at: at(milliseconds: 0), streams: 1).0))
        _ = pool.connectionStopped(slot: 0, connection: old, at: at(milliseconds: 100))
        let new = connect(&pool, slot: 0, at: at(milliseconds: 200))
        let newLease = try #require(leased(lease(&pool, at: at(milliseconds: 200), streams: 1).0))
        #expect(newLease.connection === new)
        let waiter = try #require(wait(&pool, after: lease(&pool, at: at(milliseconds: 200), streams: 1).0,
                                       at: at(milliseconds: 200)))
        #expect(pool.finish(oldLease, answered: false, throttled: false, at: at(milliseconds: 300)).resumeWaiters.isEmpty)
        _ = pool.connectionStopped(slot: 0, connection: old, at: at(milliseconds: 300))
        #expect(pool.liveConnections == 1)
        #expect(pool.finish(newLease, answered: true, throttled: false, at: at(milliseconds: 300)).resumeWaiters == [waiter])
    }

    @Test("until a token connection's first answer its one stream is shared in turn; the answer wakes every waiter")
    func oneStreamUntilFirstAnswer() throws {
        var pool = machine(slots: 1, oneStreamUntilFirstAnswer: true)
        let now = at(milliseconds: 0)
        connect(&pool, slot: 0, at: now)
        // The transport allows one stream until the first answer (its rule), 10 after it.
        let first = try #require(leased(lease(&pool, at: now, streams: 1).0))
        let a = try #require(wait(&pool, after: lease(&pool, at: now, streams: 1).0, at: now))
        let b = try #require(wait(&pool, after: lease(&pool, at: now, streams: 1).0, at: now))
        let c = try #require(wait(&pool, after: lease(&pool, at: now, streams: 1).0, at: now))

        // A failure without an answer frees the one stream for the next request only.
        #expect(pool.finish(first, answered: false, throttled: false, at: now).resumeWaiters == [a])
        let (secondAttempt, passOn) = lease(&pool, at: now, streams: 1)
        let second = try #require(leased(secondAttempt))
        #expect(passOn.resumeWaiters == [b])
        // b finds the one stream taken and waits again, behind c.
        let bAgain = try #require(wait(&pool, after: lease(&pool, at: now, streams: 1).0, at: now))
        // The first answer opens the connection to many streams: everyone looks again.
        #expect(pool.finish(second, answered: true, throttled: false, at: now).resumeWaiters == [c, bAgain])
        #expect(leased(lease(&pool, at: now, streams: 10).0) != nil)
        #expect(leased(lease(&pool, at: now, streams: 10).0) != nil)
    }

    @Test("a connection with an older provider token is retired; a refused token is turned back")
    func tokens() throws {
        var pool = machine(slots: 1)
        let connection = connect(&pool, slot: 0, at: at(milliseconds: 0))
        let old = ConnectionCredential(text: "old", issuedAt: Date(timeIntervalSince1970: 1000))
        let new = ConnectionCredential(text: "new", issuedAt: Date(timeIntervalSince1970: 4000))
        let first = try #require(leased(lease(&pool, at: at(milliseconds: 0), token: old).0))
        _ = pool.finish(first, answered: true, throttled: false, at: at(milliseconds: 1))
        #expect(pool.keeperAwaitsReplacement(slot: 0, connection: connection) == nil)

        let (attempt, actions) = lease(&pool, at: at(milliseconds: 2), token: new)
        guard case .unavailable = attempt else {
            Issue.record("a connection carrying an older token took a newer one")
            return
        }
        #expect(actions.close.count == 1 && actions.close.first?.connection === connection)
        #expect(actions.close.first?.graceful == true)
        #expect(actions.resumeKeepers.map { $0.step } == [.connect(afterFailures: 0)])
        #expect(pool.liveConnections == 0)

        _ = pool.retireConnections(carrying: "new", at: at(milliseconds: 3))
        guard case .tokenRefused = lease(&pool, at: at(milliseconds: 4), token: new).0 else {
            Issue.record("a refused token was leased")
            return
        }
    }

    @Test("shutdown wakes every waiter and start(), refuses requests, waits for those in flight, then closes all")
    func shutdown() throws {
        var pool = machine(slots: 2)
        let now = at(milliseconds: 0)
        let connection = connect(&pool, slot: 0, at: now)
        let admitted = pool.admit()
        #expect(admitted)
        _ = try #require(leased(lease(&pool, at: now, streams: 1).0))
        let waiters = [
            try #require(wait(&pool, after: lease(&pool, at: now, streams: 1).0, at: now)),
            try #require(wait(&pool, after: lease(&pool, at: now, streams: 1).0, at: now)),
        ]
        #expect(pool.startMustWait, "slot 1 has not tried yet")
        #expect(pool.keeperAwaitsReplacement(slot: 0, connection: connection) == nil)

        let begun = pool.beginShutdown()
        #expect(begun.resumeWaiters == waiters)
        #expect(begun.resumeStartWaiters)
        #expect(pool.beginShutdown().resumeWaiters.isEmpty, "the second shutdown has nothing to do")
        let admittedAfterShutdown = pool.admit()
        #expect(!admittedAfterShutdown)
        guard case .shutDown = lease(&pool, at: now).0 else {
            Issue.record("leased after shutdown began")
            return
        }
        let connectsAfterShutdown = pool.connectAttemptBegins(slot: 1)
        #expect(!connectsAfterShutdown)

        let deadline = at(milliseconds: 10_000)
        #expect(pool.waitForIdle(until: deadline, at: now) == .wait(until: deadline))
        #expect(pool.waitForIdle(until: deadline, at: deadline) == .proceed)
        #expect(pool.leave().resumeIdleWaiters)
        #expect(pool.waitForIdle(until: deadline, at: now) == .proceed)

        let finished = pool.finishShutdown()
        #expect(finished.cancelKeeperTasks)
        #expect(finished.close.count == 1 && finished.close.first?.connection === connection)
        #expect(finished.close.first?.graceful == false)
        #expect(finished.resumeKeepers.map { $0.step } == [.stop])
        #expect(pool.liveConnections == 0)
        guard case .refused = pool.connected(FakeConnection(), slot: 1, at: now) else {
            Issue.record("a connection was installed after shutdown")
            return
        }
    }
}
