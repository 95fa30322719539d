import Locking
import PGPushCore
import PushQueue
import PushTransport

/// One route's share of `rate_per_app` (`SharedRate`) and the sends waiting on it, let
/// through one at a time by a single pump (one timer per start, not one wake-up per waiting
/// send), lane by lane and in the order they came within a lane.
final class SharedRateGate: Sendable {
    /// How long the pump looks again for a share when there is none (a newcomer's first
    /// seconds, a lease that could not be renewed).
    static let recheck: Duration = .milliseconds(100)

    private struct State {
        var rate: SharedRate
        var waiting = LaneQueue<CheckedContinuation<Bool, Never>>()
        var pumping = false
        var stopped = false
    }

    let rate: Int
    private let state: Locked<State>

    init(rate: Int) {
        self.rate = rate
        state = Locked(State(rate: SharedRate(rate: rate)))
    }

    /// The worker is stopping: every waiting send, and any that comes, is turned back unsent.
    func stop() {
        let waiting = state.withLock { state in
            state.stopped = true
            return state.waiting.removeAll()
        }
        for continuation in waiting { continuation.resume(returning: false) }
    }

    var share: Int { state.withLock { $0.rate.share } }

    func granted(_ grant: RateShareGrant, askedAt: ContinuousClock.Instant, lease: Duration) {
        state.withLock { $0.rate.granted(share: grant.share, askedAt: askedAt, lease: lease) }
    }

    /// Returns true when this send may start now, false when the worker is stopping.
    func admit(lane: Lane) async -> Bool {
        enum Now { case go, stopped, wait }
        let now = state.withLock { state -> Now in
            if state.stopped { return .stopped }
            guard state.waiting.isEmpty, case .go = state.rate.admit(at: .now) else { return .wait }
            return .go
        }
        switch now {
        case .go: return true
        case .stopped: return false
        case .wait: break
        }
        return await withCheckedContinuation { continuation in
            enum Then { case startPump, none, refuse }
            let then = state.withLock { state -> Then in
                if state.stopped { return .refuse }
                state.waiting.append(continuation, lane: lane)
                defer { state.pumping = true }
                return state.pumping ? .none : .startPump
            }
            switch then {
            case .startPump: Task { await pump() }
            case .refuse: continuation.resume(returning: false)
            case .none: break
            }
        }
    }

    /// Lets the waiting sends through in turn as the share allows; ends when none waits.
    private func pump() async {
        while true {
            enum Step { case resume(CheckedContinuation<Bool, Never>), sleep(until: ContinuousClock.Instant), noShare, done }
            let step = state.withLock { state -> Step in
                guard !state.waiting.isEmpty else {
                    state.pumping = false
                    return .done
                }
                switch state.rate.admit(at: .now) {
                case .go:
                    guard let next = state.waiting.popFirst() else {
                        state.pumping = false
                        return .done
                    }
                    return .resume(next)
                case .wait(let until): return .sleep(until: until)
                case .noShare: return .noShare
                }
            }
            switch step {
            case .done: return
            case .resume(let continuation): continuation.resume(returning: true)
            case .sleep(let until): try? await Task.sleep(until: until, clock: .continuous)
            case .noShare: try? await Task.sleep(for: Self.recheck)
            }
        }
    }
}
