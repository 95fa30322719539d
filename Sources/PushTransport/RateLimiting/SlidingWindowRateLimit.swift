/// At most `limit` sends in any one-second window, as a pure value with the time
/// passed in, so its arithmetic is testable without a clock.
///
/// It remembers the start instants of the last sends. A send may start once the
/// `limit`-th previous one is at least one window old: then for every i the sends i and
/// i + limit are a full window apart, so no window [t, t + 1 s) can hold more than `limit`.
/// `reserve` hands out future instants when the window is full, so concurrent callers
/// queue in order without polling; the instants it returns never decrease.
package struct SlidingWindowRateLimit<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration, Instant: Sendable {
    /// The cap the window was created with; `limit` may be lowered below it and raised back.
    package let capacity: Int
    /// The cap in force; nil means unlimited.
    package private(set) var limit: Int?
    package let window: Duration
    /// Ring of the last `capacity` reserved start instants, oldest at `head`.
    private var starts: [Instant] = []
    private var head = 0

    /// `limit` nil or 0: no cap.
    package init(limit: Int?, window: Duration = .seconds(1)) {
        let cap = (limit ?? 0) > 0 ? limit : nil
        self.limit = cap
        self.capacity = cap ?? 0
        self.window = window
        starts.reserveCapacity(min(capacity, 4096))
    }

    package var isUnlimited: Bool { limit == nil }

    /// Lowers (or restores) the cap, between 1 and `capacity`. No effect when unlimited.
    package mutating func setLimit(_ newLimit: Int) {
        guard limit != nil else { return }
        limit = min(max(newLimit, 1), capacity)
    }

    /// The earliest instant a send asked for at `now` could start, without reserving it.
    package func earliestStart(at now: Instant) -> Instant {
        guard let limit, starts.count >= limit else { return now }
        // The limit-th most recent start: index count - limit counted from the oldest.
        let oldestInWindow = starts[(head + starts.count - limit) % starts.count]
        let free = oldestInWindow.advanced(by: window)
        return free > now ? free : now
    }

    /// Reserves the earliest start for a send asked for at `now` and returns it.
    package mutating func reserve(at now: Instant) -> Instant {
        guard limit != nil else { return now }
        var start = earliestStart(at: now)
        // Keep the ring ordered even if callers' clocks race a little.
        if let newest = newestStart, start < newest { start = newest }
        record(start)
        return start
    }

    private var newestStart: Instant? {
        guard !starts.isEmpty else { return nil }
        return starts[(head + starts.count - 1) % starts.count]
    }

    private mutating func record(_ start: Instant) {
        if starts.count < capacity {
            starts.append(start)
        } else {
            starts[head] = start
            head = (head + 1) % capacity
        }
    }
}
