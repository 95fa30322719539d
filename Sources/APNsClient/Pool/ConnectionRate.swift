/// One connection's send rate: at most N requests in any window of a second (SPEC §4), and,
/// within it, at most a tenth of N in any tenth of that window.
///
/// The tenth-window is smoothing: the second-window alone would let N requests leave in
/// one burst at the start of every second. A limiter can only record the instant a request
/// is handed to the I/O thread, and a burst reaches the server smeared over the time it
/// takes to write (tens of milliseconds for hundreds of requests on a busy machine), while
/// the next second's burst may be smeared less; the server would then count more than N in
/// some second. Bursts of N/10 smear ten times less. The throughput is the same: N per
/// window under a backlog.
///
/// Both windows are a little longer than a second and a tenth (`window`), for the jitter
/// that remains; 1.004 s still sustains 99.6% of the cap (SPEC §9 asks for 99%).
struct ConnectionRate: Sendable {
    typealias Instant = ContinuousClock.Instant

    static let window: Duration = .milliseconds(1004)
    static let slices = 10

    private var perWindow: SlidingWindowRateLimit<Instant>
    private var perSlice: SlidingWindowRateLimit<Instant>

    /// nil: unlimited.
    init(limit: Int?) {
        perWindow = SlidingWindowRateLimit(limit: limit, window: Self.window)
        perSlice = SlidingWindowRateLimit(limit: limit.map(Self.sliceLimit), window: Self.window / Self.slices)
    }

    /// The cap in force (lowered while 429s spread); nil when unlimited.
    var limit: Int? { perWindow.limit }

    func earliestStart(at now: Instant) -> Instant {
        max(perWindow.earliestStart(at: now), perSlice.earliestStart(at: now))
    }

    /// Records a send starting `now`; call only when `earliestStart(at: now) <= now`.
    mutating func record(at now: Instant) {
        _ = perWindow.reserve(at: now)
        _ = perSlice.reserve(at: now)
    }

    mutating func setLimit(_ limit: Int) {
        perWindow.setLimit(limit)
        perSlice.setLimit(Self.sliceLimit(limit))
    }

    /// A fifth over the even share: a tenth that started late can partly catch up in the
    /// next one, so small delays do not add up to a lower rate, while bursts stay small
    /// (the second-window stays the hard cap).
    private static func sliceLimit(_ limit: Int) -> Int {
        max(1, (limit * 6 + slices * 5 - 1) / (slices * 5))
    }
}
