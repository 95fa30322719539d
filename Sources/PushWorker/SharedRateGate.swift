import PushQueue
import PushTransport
import Synchronization

/// One route's share of `rate_per_app` (`SharedRate`) and the sends waiting on it.
final class SharedRateGate: Sendable {
    /// How long a waiting send looks again for a share when there is none (a newcomer's
    /// first seconds, a lease that could not be renewed).
    static let recheck: Duration = .milliseconds(100)

    let rate: Int
    private let state: Mutex<SharedRate>

    init(rate: Int) {
        self.rate = rate
        state = Mutex(SharedRate(rate: rate))
    }

    var share: Int { state.withLock { $0.share } }

    func granted(_ grant: RateShareGrant, askedAt: ContinuousClock.Instant, lease: Duration) {
        state.withLock { $0.granted(share: grant.share, askedAt: askedAt, lease: lease) }
    }

    /// Waits until this send may start within the share; false when `giveUp` says to stop
    /// waiting (the worker is stopping: the row goes back unsent).
    func admit(giveUp: () -> Bool) async -> Bool {
        while true {
            if let start = state.withLock({ $0.reserve(at: .now) }) {
                if start > .now { try? await Task.sleep(until: start, clock: .continuous) }
                return true
            }
            if giveUp() || Task.isCancelled { return false }
            try? await Task.sleep(for: Self.recheck)
        }
    }
}
