import PGPushCore

/// One connection's send rate: at most N requests in any window of a second,
/// and, within it, starts paced evenly, one every window/N.
///
/// The pacing is what makes the cap hold where APNs counts, on arrival. The second-window
/// alone would let N requests leave in one burst at the start of every second; a burst
/// reaches the server smeared over the time it takes to write and read, and with many
/// connections bursting together the server reads them in an order that changes from one
/// second to the next, so a connection's burst counted late in one second and early in
/// the next puts more than N in the window between. Evenly paced requests arrive evenly.
///
/// The pacer keeps a schedule: each start moves it on by one interval from where the
/// schedule was, not from when the start happened, so starts that were a little late (a
/// sleeper woken late, a busy loop) are made up by the next ones, up to `catchUp`
/// intervals behind; the rate does not sag with every delay. Starts never run ahead of
/// the schedule, so a backlog leaves evenly spaced. The hard cap, as the server counts,
/// is the transport's `SubmitWindow` (`RateCap.window` + 0.2 ms); this pacer's window is longer, + 4 ms
/// (99.6% of the cap; the target is 99%), so that a request the transport held back
/// (it counts a request late when its answer is late) and the ones a window after it
/// get back onto the schedule by about 4 ms a window instead of carrying the delay on.
package struct ConnectionRate: Sendable {
    package typealias Instant = PoolInstant

    package static let window: Duration = RateCap.window + .milliseconds(4)
    /// How far behind its schedule a connection may catch up, in intervals: 120 ms at the
    /// default cap, the length of the longer stalls seen on a busy two-core machine.
    package static let catchUp = 12

    private let window: Duration
    private var perWindow: SlidingWindowRateLimit<Instant>
    private var interval: Duration?
    /// When the next start is due on the even schedule.
    private var scheduled: Instant?

    /// nil: unlimited. `window`: longer than a second for a margin (`SharedRate`'s).
    package init(limit: Int?, window: Duration = Self.window) {
        self.window = window
        perWindow = SlidingWindowRateLimit(limit: limit, window: window)
        interval = perWindow.limit.map { window / $0 }
    }

    /// The cap in force (lowered while 429s spread); nil when unlimited.
    package var limit: Int? { perWindow.limit }

    package func earliestStart(at now: Instant) -> Instant {
        max(perWindow.earliestStart(at: now), scheduled ?? now)
    }

    /// Records a send starting `now`; call only when `earliestStart(at: now) <= now`.
    package mutating func record(at now: Instant) {
        _ = perWindow.reserve(at: now)
        guard let interval else { return }
        // On from the schedule, or from `catchUp` intervals ago when further behind (after an
        // idle spell), so that idleness banks at most that many starts.
        scheduled = max(scheduled ?? now, now - interval * Self.catchUp) + interval
    }

    /// Forgets how far behind the schedule is, keeping its pace: a schedule already
    /// behind `now` moves up to it, so nothing is banked to catch up.
    package mutating func restartSchedule(at now: Instant) {
        if let due = scheduled, due < now { scheduled = now }
    }

    package mutating func setLimit(_ limit: Int) {
        perWindow.setLimit(limit)
        interval = perWindow.limit.map { window / $0 }
    }
}
