/// At most `limit` requests in any one-second window as the *server* receives them.
///
/// Counting submissions at the instants this side writes them is not enough: a request
/// can reach the server later than it was written (the I/O thread preempted between
/// reading the clock and writing, a receiver that was behind and finds several requests
/// waiting at once, a retransmission), and a late arrival next to punctual ones makes
/// more than `limit` in one of the server's seconds. So each request is counted from the
/// latest instant the server can have received it: when its answer came back, less the
/// fastest round trip this connection has seen. A round trip is the way out, the server's
/// work and the way back, so subtracting the fastest one can count a request early by at
/// most the fastest way out (microseconds on one machine, which the window's extra
/// millisecond covers), and a distant server's round trip costs no rate. The fastest is
/// trusted only after a window's worth of answers: the first ones on a new connection
/// come from a server still busy with handshakes and overstate it. Until its answer is
/// in, a request holds the window open.
///
/// Request `n` goes only when every request up to `n - limit` is counted at least one
/// window before now. Then any second of the server's holds at most `limit`: if it
/// holds request `n`, received at or after `n` was written, it cannot hold `n - limit`
/// or anything before it, all received a window earlier.
struct SubmitWindow {
    /// One request's place in the window.
    private struct Entry {
        var submitted: UInt64
        /// The latest the server can have received it; `.max` until that is known.
        var counted: UInt64
    }

    /// A second and a millisecond: see the type's comment.
    static let window: UInt64 = 1_001_000_000

    private let limit: Int
    /// The last `limit` submissions; sequence `s` sits at `s % limit`.
    private var entries: [Entry]
    private var nextSequence = 0
    /// The latest `counted` among requests that left `entries` (all were known by then).
    private var leftLatest: UInt64 = 0
    private var fastestRoundTrip: UInt64 = .max
    private var answers = 0

    init(limit: Int) {
        self.limit = max(limit, 1)
        entries = []
        entries.reserveCapacity(self.limit)
    }

    /// When the next request may go (`now` or later), or nil while the request `limit`
    /// submissions back is still unanswered.
    func nextAllowed(now: UInt64) -> UInt64? {
        guard entries.count == limit else { return now }
        let oldest = entries[nextSequence % limit]
        guard oldest.counted != .max else { return nil }
        return max(now, max(leftLatest, oldest.counted) &+ Self.window)
    }

    /// A request was written at `instant`; returns its sequence number, for `answered`
    /// or `abandoned` later.
    mutating func record(_ instant: UInt64) -> Int {
        let sequence = nextSequence
        let entry = Entry(submitted: instant, counted: .max)
        if entries.count < limit {
            entries.append(entry)
        } else {
            leftLatest = max(leftLatest, entries[sequence % limit].counted)
            entries[sequence % limit] = entry
        }
        nextSequence += 1
        return sequence
    }

    /// The answer to request `sequence` arrived at `instant`.
    mutating func answered(_ sequence: Int, at instant: UInt64) {
        guard let index = index(of: sequence) else { return }
        let submitted = entries[index].submitted
        let roundTrip = instant >= submitted ? instant - submitted : 0
        fastestRoundTrip = min(fastestRoundTrip, roundTrip)
        answers += 1
        let earlier = answers >= limit ? fastestRoundTrip : 0
        entries[index].counted = max(submitted, instant - earlier)
    }

    /// Request `sequence` ended at `instant` without an answer (reset, expired, never
    /// sent): counted from then, the latest it can have been received that is known.
    mutating func abandoned(_ sequence: Int, at instant: UInt64) {
        guard let index = index(of: sequence) else { return }
        entries[index].counted = max(entries[index].submitted, instant)
    }

    private func index(of sequence: Int) -> Int? {
        guard sequence < nextSequence, sequence >= nextSequence - entries.count else { return nil }
        return sequence % limit
    }
}
