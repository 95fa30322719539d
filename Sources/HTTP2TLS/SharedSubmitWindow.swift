import Synchronization

/// One cap over every connection of a client, counted as the connection caps are
/// (`SubmitWindow`: from when each request's bytes reach the kernel, as the server can
/// receive it), for a rate shared beyond one connection: this process's share of an app's
/// `rate_per_app`. The connections of one client run on its one I/O thread; the lock is for
/// the grants, which come from elsewhere.
///
/// A share holds until its lease ends (`validFor`), then nothing goes until the next grant.
/// A larger share takes effect at once; a smaller one only a window after the share it
/// replaces would have ended, since until then the worker may still be sending at that
/// share elsewhere in its pipeline, and the database counts it for that long.
package final class SharedSubmitWindow: Sendable {
    private struct State {
        var limit = 0
        var window: SubmitWindow?
        var validUntil: UInt64 = 0
        var lowering: (limit: Int, at: UInt64)?

        mutating func applyLowering(now: UInt64) {
            guard let lowering, now >= lowering.at else { return }
            limit = lowering.limit
            if limit > 0 { window = window?.resized(to: limit, now: now) }
            self.lowering = nil
        }
    }

    /// How long a connection waits before it looks again while there is no share.
    static let recheck: UInt64 = 100_000_000

    private let state = Mutex(State())

    package init() {}

    /// A share of `limit` requests per second for `validFor` from now; 0: none. A lease already
    /// over (`validFor` zero or less: the answer came later than the lease lasts) allows nothing.
    package func grant(limit: Int, validFor: Duration) {
        let now = MonotonicClock.now()
        let lease = MonotonicClock.nanoseconds(validFor)
        state.withLock { state in
            state.applyLowering(now: now)
            let previousEnd = state.validUntil
            state.validUntil = now &+ lease
            if limit >= state.limit {
                state.lowering = nil
                if limit > state.limit {
                    state.limit = limit
                    state.window = state.window?.resized(to: limit, now: now) ?? SubmitWindow(limit: limit)
                }
            } else {
                state.lowering = (limit, max(previousEnd, now) &+ SubmitWindow.window)
            }
        }
    }

    /// When the next request may go: `now` or later; without a share, a moment later, to look again.
    func nextAllowed(now: UInt64) -> UInt64 {
        state.withLock { state in
            state.applyLowering(now: now)
            guard state.limit > 0, let window = state.window, now < state.validUntil else { return now &+ Self.recheck }
            let allowed = window.nextAllowed(now: now)
            return allowed < state.validUntil ? allowed : now &+ Self.recheck
        }
    }

    func record(_ instant: UInt64) -> Int? {
        state.withLock { $0.window?.record(instant) }
    }

    func wrote(_ sequences: [Int], at instant: UInt64) {
        state.withLock { $0.window?.wrote(sequences, at: instant) }
    }

    func answered(_ sequence: Int, at instant: UInt64) {
        state.withLock { $0.window?.answered(sequence, at: instant) }
    }

    func abandoned(_ sequence: Int, at instant: UInt64) {
        state.withLock { $0.window?.abandoned(sequence, at: instant) }
    }
}

extension SharedSubmitWindow: Equatable {
    /// The same window, not an equal one: each is its own client's.
    package static func == (lhs: SharedSubmitWindow, rhs: SharedSubmitWindow) -> Bool { lhs === rhs }
}
