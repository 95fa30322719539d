/// At most `limit` request submissions in any one-second window, judged by
/// the instants the I/O thread actually submits them (just before they are
/// written). A pool above may space requests as it likes; if the loop is
/// held up and several requests arrive at once, this still spreads them, so
/// the server never sees more than `limit` in any second. The window is a millisecond
/// longer than a second, so that an instant read a few microseconds away from this one
/// (a log line, a packet capture) still finds at most `limit` in any second; the pool's
/// pacing (1.004 s per `limit`) never runs into that millisecond.
struct SubmitWindow {
    private let limit: Int
    private var instants: [UInt64]
    private var oldest = 0
    static let window: UInt64 = 1_001_000_000

    init(limit: Int) {
        self.limit = max(limit, 1)
        instants = []
        instants.reserveCapacity(self.limit)
    }

    /// When the next submission may happen (`now` or later).
    func nextAllowed(now: UInt64) -> UInt64 {
        guard instants.count == limit else { return now }
        return max(now, instants[oldest] &+ Self.window)
    }

    mutating func record(_ instant: UInt64) {
        if instants.count < limit {
            instants.append(instant)
        } else {
            instants[oldest] = instant
            oldest = (oldest + 1) % limit
        }
    }
}
