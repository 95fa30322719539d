import Locking
import PGPushCore

/// Whether the worker may send for an app, and for each scope of it (APNs: a topic; see
/// `NotificationSender.scope(of:)`).
///
/// Credential, certificate and environment errors pause the whole app (the claim loop
/// stops claiming); a scope error pauses that scope only, while the app's other scopes
/// keep their full rate. After a pause one request is sent as a probe, and its answer
/// resumes the scope; another refusal doubles the pause, from 5 s up to 5 minutes.
///
/// Nothing is taken on trust at start either: the app sends one row before its first
/// answer, and each scope one request before the service has answered one of it, so a key or
/// a topic that is refused costs one request, not a claim's worth.
final class AppHealth: Sendable {
    enum Phase: Equatable {
        case healthy
        case paused(until: ContinuousClock.Instant)
        case probing
    }

    /// One pausable part: the app, or one of its scopes.
    private struct Gate {
        var phase: Phase
        var backoff: Duration = .zero

        mutating func currentPhase(at now: ContinuousClock.Instant) -> Phase {
            if case .paused(let until) = phase, now >= until { phase = .probing }
            return phase
        }

        /// Returns the pause when this report paused the scope (nil if it already was).
        mutating func pause(at now: ContinuousClock.Instant) -> Duration? {
            if case .paused = currentPhase(at: now) { return nil }
            backoff = backoff == .zero ? AppHealth.firstPause : min(backoff * 2, AppHealth.longestPause)
            phase = .paused(until: now + backoff)
            return backoff
        }
    }

    /// A scope's gate, the request probing it, and the rows waiting for that probe.
    private struct Scope {
        var gate = Gate(phase: .probing)
        var probeInFlight = false
        /// Bumped whenever the scope's gate or probe changes: a row that decided to wait
        /// before a change does not wait after it.
        var generation = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private struct State {
        var app = Gate(phase: .probing)
        var scopes: [String: Scope] = [:]
        var nextWaiterID = 0
        var reportedHealthy = false
        /// By the part of the app a wrong setup shows in: "" for the whole app (APNs, FCM), a
        /// push service origin for Web Push (`NotificationSender.wrongSetupIsPerScope`).
        var mismatch: [String: WrongSetupMonitor] = [:]
        /// When each flag (`flag(_:)`) was last written and last seen.
        var flagged: [String: (written: ContinuousClock.Instant, seen: ContinuousClock.Instant)] = [:]
    }

    private enum Admission {
        case send
        case park(Duration)
        case wait(generation: Int)
    }

    /// What `admitWithoutWaiting(scope:)` says.
    enum ScopeAdmission: Equatable {
        case send
        /// Back to the queue for this long.
        case park(Duration)
        /// The scope's probe is out: `admit(scope:)` waits for its answer.
        case waitForProbe
    }

    static let firstPause: Duration = .seconds(5)
    static let longestPause: Duration = .seconds(300)

    private let state = Locked(State())
    /// The time pauses are measured against; tests pass one that moves only when told.
    private let now: @Sendable () -> ContinuousClock.Instant

    init(now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.now = now
    }

    /// Rows of `scope` waiting for its probe's answer (tests wait on it).
    func waitingRows(scope: String) -> Int {
        state.withLock { $0.scopes[scope]?.waiters.count ?? 0 }
    }

    /// The whole app's phase, which the claim loop follows.
    var phase: Phase {
        state.withLock { $0.app.currentPhase(at: now()) }
    }

    /// Whether a row for `scope` may be sent now: nil to send it, else how long to park it
    /// in the queue. While the scope's probe is out the row waits here for its answer.
    /// Every nil must be followed by `scopeAnswered` or `reportProblem(scope:)`.
    /// A cancelled task (the worker is stopping) gets `.zero`: back to the queue at once.
    func admit(scope: String) async -> Duration? {
        while true {
            // Waiting returns at once for a cancelled task: without this the loop would spin.
            if Task.isCancelled { return .zero }
            switch decide(scope: scope) {
            case .send: return nil
            case .park(let wait): return wait
            case .wait(let generation): await waitForProbe(of: scope, after: generation)
            }
        }
    }

    /// `admit(scope:)`'s answer when it needs no waiting, which is every row's but those
    /// behind a probe: a call that is not async, so a healthy scope's row costs no task frame.
    func admitWithoutWaiting(scope: String) -> ScopeAdmission {
        switch decide(scope: scope) {
        case .send: .send
        case .park(let wait): .park(wait)
        case .wait: .waitForProbe
        }
    }

    private func decide(scope: String) -> Admission {
        let now = self.now()
        return state.withLock { state -> Admission in
            var entry = state.scopes[scope, default: Scope()]
            defer { state.scopes[scope] = entry }
            switch entry.gate.currentPhase(at: now) {
            case .healthy:
                return .send
            case .paused(let until):
                return .park(max(now.duration(to: until), .seconds(1)))
            case .probing:
                guard entry.probeInFlight else {
                    entry.probeInFlight = true
                    return .send
                }
                return .wait(generation: entry.generation)
            }
        }
    }

    private func waitForProbe(of scope: String, after generation: Int) async {
        let id = state.withLock { state -> Int in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = state.withLock { state -> Bool in
                    guard !Task.isCancelled, state.scopes[scope]?.generation == generation else { return false }
                    state.scopes[scope]?.waiters[id] = continuation
                    return true
                }
                if !waiting { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.scopes[scope]?.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Pauses the app, or one scope of it. Returns the pause when this report paused it.
    func reportProblem(scope: String? = nil) -> Duration? {
        let now = self.now()
        let (pause, waiters) = state.withLock { state -> (Duration?, [CheckedContinuation<Void, Never>]) in
            guard let scope else {
                state.reportedHealthy = false
                return (state.app.pause(at: now), [])
            }
            var entry = state.scopes[scope, default: Scope()]
            let pause = entry.gate.pause(at: now)
            let waiters = Self.probeEnded(&entry)
            state.scopes[scope] = entry
            return (pause, waiters)
        }
        waiters.forEach { $0.resume() }
        return pause
    }

    /// A row of `scope` was answered without a scope refusal. `accepted`: the service answered it
    /// past its credential and scope checks, which opens the scope; otherwise nothing was
    /// learned and the next row probes. Returns true when this ended a pause of the scope.
    func scopeAnswered(_ scope: String, accepted: Bool) -> Bool {
        let (resumed, waiters) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
            guard var entry = state.scopes[scope] else { return (false, []) }
            let wasPaused = entry.gate.backoff != .zero
            if accepted { entry.gate = Gate(phase: .healthy) }
            let waiters = Self.probeEnded(&entry)
            state.scopes[scope] = entry
            return (accepted && wasPaused, waiters)
        }
        waiters.forEach { $0.resume() }
        return resumed
    }

    private static func probeEnded(_ entry: inout Scope) -> [CheckedContinuation<Void, Never>] {
        entry.probeInFlight = false
        entry.generation += 1
        defer { entry.waiters.removeAll() }
        return Array(entry.waiters.values)
    }

    /// The service accepted the app's credentials. Returns true when this should be written as
    /// "healthy" (first one, or after a problem). While a wrong setup is suspected, or a
    /// flag was seen in the last minute, the app stays reported unhealthy.
    func reportSuccess() -> Bool {
        state.withLock { state in
            state.app = Gate(phase: .healthy)
            guard !state.mismatch.values.contains(where: \.isSuspected) else { return false }
            if !state.flagged.isEmpty {
                // Read the clock only here: every delivered row comes through this.
                let now = self.now()
                state.flagged = state.flagged.filter { now - $0.value.seen < Self.flagInterval }
                guard state.flagged.isEmpty else { return false }
            }
            defer { state.reportedHealthy = true }
            return !state.reportedHealthy
        }
    }

    /// How often one flag is written again while its answers keep coming.
    static let flagInterval: Duration = .seconds(60)

    /// An answer says something is wrong for part of the app's rows while the others go on
    /// (`Delivery.healthFlag`): true when it is to be written to `app_health` now (the first
    /// time, then at most once a minute while such answers keep coming). The app stays
    /// reported unhealthy until a minute has passed without one.
    func flag(_ reason: String) -> Bool {
        let now = self.now()
        return state.withLock { state in
            state.reportedHealthy = false
            if let last = state.flagged[reason], now - last.written < Self.flagInterval {
                state.flagged[reason]?.seen = now
                return false
            }
            state.flagged[reason] = (now, now)
            return true
        }
    }

    /// Feeds every answer from the service to the wrong-setup monitor of `scope` (nil: the
    /// whole app): `hintsWrongSetup` when it is the kind that points at one (`Delivery.hintsWrongSetup`).
    func recordAnswer(hintsWrongSetup: Bool, scope: String? = nil) -> WrongSetupMonitor.Change {
        state.withLock { state in
            let verdict = state.mismatch[scope ?? "", default: WrongSetupMonitor()].record(hintsWrongSetup: hintsWrongSetup)
            if verdict == .suspected { state.reportedHealthy = false }
            return verdict
        }
    }
}
