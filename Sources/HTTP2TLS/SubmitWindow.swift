import PGPushCore

/// At most `limit` requests in any one-second window as the *server* receives them.
///
/// Counting requests when this side submits them is not enough: a request can reach the
/// server later than that (the I/O thread held up between reading the clock and writing;
/// a receiver that was behind, whose kernel stamps a buffer of merged, unread segments
/// with the newest one's time), and a late arrival next to punctual ones a second later
/// makes more than `limit` in one of the server's seconds. So each request is counted
/// from the latest instant the server can have received it, as far as this side knows:
/// - from when its bytes were handed to the kernel, not when it was submitted;
/// - from its answer's arrival (the kernel's receive time), less the fastest round trip
///   the connection has seen, when that comes sooner than `lagAllowance` after the
///   write. A round trip is the way out, the server's work and the way back, so this
///   errs early by at most the fastest way out: microseconds on one machine, inside the
///   window's extra 0.2 ms. The fastest is trusted only after a window's worth of
///   answers: a new connection's first come from a server busy with handshakes.
/// - otherwise from `lagAllowance` after the write, answered or not. An answer cannot
///   tell a server that read late from one that answered late, and a late count holds
///   back a request one window on, and through it the ones after (the pool's pacing,
///   slower than this window, absorbs such a delay a few ms per window). So a slow
///   server costs at most that much, and a server that read later than that can still
///   count one too many (the bench runs the simulator at a raised priority).
///
/// Request `n` goes only when every request up to `n - limit` is counted at least one
/// window before now: then any second of the server's that holds request `n` (received
/// after it was submitted) holds nothing from `n - limit` back.
struct SubmitWindow {
    /// One request's place in the window.
    private struct Entry {
        /// When its bytes were handed to the kernel (until then, when it was submitted).
        var written: UInt64
        /// The latest the server can have received it, as far as known: `.max` until
        /// written, then at most `written + lagAllowance`.
        var counted: UInt64
    }

    /// The cap's window and 0.2 ms: see the type's comment.
    static let window = MonotonicClock.nanoseconds(RateCap.window + .microseconds(200))
    static let lagAllowance: UInt64 = 25_000_000

    private(set) var limit: Int
    /// The last `limit` submissions; sequence `s` sits at `slot(s)`.
    private var entries: [Entry]
    /// The sequence at `entries[0]` when the ring began (0, or where a resize began it again).
    private var base = 0
    private var nextSequence = 0
    /// Sequences from here on are submitted but not yet written.
    private var firstUnwritten = 0
    /// The latest `counted` among requests that left `entries` (all were known by then).
    private var leftLatest: UInt64 = 0
    private var fastestRoundTrip: UInt64 = .max
    private var answers = 0

    init(limit: Int) {
        self.limit = max(limit, 1)
        entries = []
        entries.reserveCapacity(self.limit)
    }

    /// When the next request may go (`now` or later). An answer can make it earlier.
    func nextAllowed(now: UInt64) -> UInt64 {
        guard entries.count == limit else { return now }
        let oldest = Self.latest(entries[slot(nextSequence)], now: now)
        return max(now, max(leftLatest, oldest) &+ Self.window)
    }

    /// The latest an entry can be received. One not even written a window after it was
    /// submitted (a socket that takes nothing) may leave any moment: counted as if now.
    private static func latest(_ entry: Entry, now: UInt64) -> UInt64 {
        entry.counted == .max ? now &+ lagAllowance : entry.counted
    }

    /// A request was submitted at `instant`; returns its sequence number, for `answered`
    /// or `abandoned` later. `wrote(at:)` says when its bytes left.
    mutating func record(_ instant: UInt64) -> Int {
        let sequence = nextSequence
        let entry = Entry(written: instant, counted: .max)
        if entries.count < limit {
            entries.append(entry)
        } else {
            leftLatest = max(leftLatest, Self.latest(entries[slot(sequence)], now: instant))
            entries[slot(sequence)] = entry
        }
        nextSequence += 1
        return sequence
    }

    /// Everything submitted so far was handed to the kernel by `instant`.
    mutating func wrote(at instant: UInt64) {
        for sequence in max(firstUnwritten, nextSequence - entries.count)..<nextSequence {
            let index = slot(sequence)
            entries[index].written = instant
            entries[index].counted = min(entries[index].counted, instant &+ Self.lagAllowance)
        }
        firstUnwritten = nextSequence
    }

    /// The answer to request `sequence` arrived at `instant`.
    mutating func answered(_ sequence: Int, at instant: UInt64) {
        guard let index = index(of: sequence) else { return }
        let written = entries[index].written
        let roundTrip = instant >= written ? instant - written : 0
        fastestRoundTrip = min(fastestRoundTrip, roundTrip)
        answers += 1
        let earlier = answers >= limit ? min(fastestRoundTrip, instant) : 0
        entries[index].counted = min(entries[index].counted, max(written, instant - earlier))
    }

    /// Request `sequence` ended at `instant` without an answer (reset, expired, never
    /// sent): the server cannot have received it after that.
    mutating func abandoned(_ sequence: Int, at instant: UInt64) {
        guard let index = index(of: sequence) else { return }
        entries[index].counted = min(entries[index].counted, max(entries[index].written, instant))
    }

    /// Only these sequences were handed to the kernel by `instant` (a window shared by
    /// several connections: each knows what it wrote).
    mutating func wrote(_ sequences: [Int], at instant: UInt64) {
        for sequence in sequences {
            guard let index = index(of: sequence) else { continue }
            entries[index].written = instant
            entries[index].counted = min(entries[index].counted, instant &+ Self.lagAllowance)
        }
    }

    /// The same window under another limit, its sequence numbers kept: the newest requests
    /// stay (as many as the new limit holds), and those that leave count in `leftLatest` as
    /// the latest any of them can be received, so a lowered limit holds at once over the
    /// requests already sent.
    func resized(to newLimit: Int, now: UInt64) -> SubmitWindow {
        var resized = SubmitWindow(limit: newLimit)
        let kept = min(entries.count, resized.limit)
        let first = nextSequence - entries.count
        resized.leftLatest = leftLatest
        for sequence in first..<nextSequence - kept {
            resized.leftLatest = max(resized.leftLatest, Self.latest(entries[slot(sequence)], now: now))
        }
        resized.base = nextSequence - kept
        resized.entries = (resized.base..<nextSequence).map { entries[slot($0)] }
        resized.nextSequence = nextSequence
        resized.firstUnwritten = firstUnwritten
        resized.fastestRoundTrip = fastestRoundTrip
        resized.answers = answers
        return resized
    }

    private func slot(_ sequence: Int) -> Int { (sequence - base) % limit }

    private func index(of sequence: Int) -> Int? {
        guard sequence < nextSequence, sequence >= nextSequence - entries.count else { return nil }
        return slot(sequence)
    }
}
