import Locking

/// One connection's request-rate cap, shared by the tasks sending on it.
///
/// `acquire` reserves the next start instant under a lock and sleeps until exactly that
/// instant; no polling. The clock is injectable so tests can check the instants.
public final class RateLimiter<C: Clock>: Sendable where C.Duration == Duration, C.Instant: Sendable, C: Sendable {
    private let clock: C
    private let state: Locked<SlidingWindowRateLimit<C.Instant>>

    /// `limit` nil or 0: unlimited (`acquire` never waits).
    public init(limit: Int?, window: Duration = .seconds(1), clock: C) {
        self.clock = clock
        state = Locked(SlidingWindowRateLimit(limit: limit, window: window))
    }

    public var limit: Int? { state.withLock { $0.limit } }
    public var capacity: Int { state.withLock { $0.capacity } }

    public func setLimit(_ limit: Int) {
        state.withLock { $0.setLimit(limit) }
    }

    /// When a send asked for at `now` (default: the clock's now) could start; for picking
    /// the connection that frees first, compare several limiters at one `now`.
    public func earliestStart(at now: C.Instant? = nil) -> C.Instant {
        let now = now ?? clock.now
        return state.withLock { $0.earliestStart(at: now) }
    }

    /// Reserves a start instant without waiting; pair with `wait(until:)`.
    public func reserve(at now: C.Instant? = nil) -> C.Instant {
        let now = now ?? clock.now
        return state.withLock { $0.reserve(at: now) }
    }

    /// Sleeps until `start` if it lies ahead; returns how long it waited.
    /// Cancellation ends the wait early (the reservation stays used).
    @discardableResult
    public func wait(until start: C.Instant) async -> Duration {
        let now = clock.now
        guard start > now else { return .zero }
        try? await clock.sleep(until: start, tolerance: nil)
        return now.duration(to: start)
    }

    /// Reserves the next start and waits for it; returns the time waited.
    @discardableResult
    public func acquire() async -> Duration {
        await wait(until: reserve())
    }
}

extension RateLimiter where C == ContinuousClock {
    public convenience init(limit: Int?, window: Duration = .seconds(1)) {
        self.init(limit: limit, window: window, clock: ContinuousClock())
    }
}
