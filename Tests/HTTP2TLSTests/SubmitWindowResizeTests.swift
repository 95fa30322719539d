@testable import HTTP2TLS
import Testing

private let second: UInt64 = 1_000_000_000
private let millisecond: UInt64 = 1_000_000

@Suite("Submit window resized: a share of rate_per_app raised or lowered over the requests already sent")
struct SubmitWindowResizeTests {
    /// A backlog through `window` from `now`, each request answered at once; the instants.
    private func backlog(_ window: inout SubmitWindow, from start: UInt64, count: Int) -> [UInt64] {
        var now = start
        var sent: [UInt64] = []
        for _ in 0..<count {
            now = window.nextAllowed(now: now)
            let sequence = window.record(now)
            window.wrote(at: now)
            window.answered(sequence, at: now)
            sent.append(now)
        }
        return sent
    }

    /// At most `limit` of `instants` in any one second.
    private func holds(_ instants: [UInt64], limit: Int) -> Bool {
        instants.indices.allSatisfy { index in instants[index...].prefix { $0 < instants[index] + second }.count <= limit }
    }

    @Test("lowered from 10 to 4 after a burst of 10: the next requests keep every second at 4 or fewer, old ones counted")
    func lowering() {
        var window = SubmitWindow(limit: 10)
        let before = backlog(&window, from: 10 * second, count: 10)
        var lowered = window.resized(to: 4, now: before.last ?? 0)
        let after = backlog(&lowered, from: before.last ?? 0, count: 12)
        #expect(after.first.map { $0 >= before[9] + SubmitWindow.window - 1 } == true, "\(after.first ?? 0)")
        #expect(holds(after, limit: 4) && holds(before + after, limit: 10))
        // From a window after the burst on, the old requests are out of every second: 4 at most.
        let tail = (before + after).filter { $0 >= before[9] + SubmitWindow.window }
        #expect(holds(tail, limit: 4))
    }

    @Test("raised from 3 to 6 with 3 sent: 3 more go at once; answers of requests sent before the resize still count")
    func raising() {
        var window = SubmitWindow(limit: 3)
        var sequences: [Int] = []
        for step in 0..<3 {
            sequences.append(window.record(UInt64(step) * millisecond))
        }
        window.wrote(at: 3 * millisecond)
        var raised = window.resized(to: 6, now: 3 * millisecond)
        #expect(raised.nextAllowed(now: 4 * millisecond) == 4 * millisecond)
        for step in 0..<3 { _ = raised.record(UInt64(4 + step) * millisecond) }
        raised.wrote(at: 7 * millisecond)
        // Full: the first request, unanswered, counts from its write plus the lag allowance.
        #expect(raised.nextAllowed(now: 8 * millisecond) == 3 * millisecond + SubmitWindow.lagAllowance + SubmitWindow.window)
        raised.answered(sequences[0], at: 3 * millisecond)
        #expect(raised.nextAllowed(now: 8 * millisecond) == 3 * millisecond + SubmitWindow.window)
    }
}

@Suite("Shared submit window: a share only while its lease holds")
struct SharedSubmitWindowTests {
    @Test("a lease over before its grant arrives (a renewal slower than the lease) allows nothing, and does not trap")
    func aLeaseAlreadyOver() {
        let window = SharedSubmitWindow()
        // Under a second over: whole seconds 0, attoseconds negative (it trapped once, on a busy machine).
        window.grant(limit: 10, validFor: .milliseconds(-300))
        let now = MonotonicClock.now()
        #expect(window.nextAllowed(now: now) > now)
        window.grant(limit: 10, validFor: .seconds(60))
        #expect(window.nextAllowed(now: MonotonicClock.now()) <= MonotonicClock.now())
    }
}
