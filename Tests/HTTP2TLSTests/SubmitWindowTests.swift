@testable import HTTP2TLS
import Testing

private let second: UInt64 = 1_000_000_000
private let millisecond: UInt64 = 1_000_000

@Suite("Submit window: at most N requests in any one second the server counts")
struct SubmitWindowTests {
    @Test("a burst answered at once is spread so no one-second window holds more than the limit")
    func burstIsSpread() throws {
        var window = SubmitWindow(limit: 3)
        var now: UInt64 = 10 * second
        var submitted: [UInt64] = []
        for _ in 0..<10 {
            now = try #require(window.nextAllowed(now: now))
            let sequence = window.record(now)
            window.answered(sequence, at: now)
            submitted.append(now)
        }
        for (index, instant) in submitted.enumerated() {
            #expect(submitted[index...].prefix { $0 < instant + second }.count <= 3)
        }
        #expect(submitted[3] == submitted[0] + SubmitWindow.window)
        #expect(submitted[9] == 10 * second + 3 * SubmitWindow.window)
    }

    @Test("below the limit nothing waits")
    func belowLimit() {
        var window = SubmitWindow(limit: 100)
        for step in 0..<100 {
            let now = UInt64(step) * 10 * millisecond
            #expect(window.nextAllowed(now: now) == now)
            window.answered(window.record(now), at: now + millisecond)
        }
        // The first answer, 1 ms after its request, counts at its arrival.
        #expect(window.nextAllowed(now: 990 * millisecond + 1) == millisecond + SubmitWindow.window)
    }

    @Test("the request a limit back holds the window open until its answer is in")
    func unansweredHoldsTheWindow() {
        var window = SubmitWindow(limit: 2)
        let first = window.record(0)
        window.answered(window.record(0), at: millisecond)
        #expect(window.nextAllowed(now: 5 * second) == nil)
        window.answered(first, at: 5 * second)
        #expect(window.nextAllowed(now: 5 * second) == 5 * second - millisecond + SubmitWindow.window)
    }

    @Test("a late answer counts from its arrival less the fastest round trip")
    func lateAnswerCountsLate() {
        var window = SubmitWindow(limit: 1)
        window.answered(window.record(0), at: 2 * millisecond)          // fastest round trip: 2 ms
        #expect(window.nextAllowed(now: 0) == SubmitWindow.window)       // counted at 0
        window.answered(window.record(SubmitWindow.window), at: SubmitWindow.window + 50 * millisecond)
        #expect(window.nextAllowed(now: 0) == SubmitWindow.window + 48 * millisecond + SubmitWindow.window)
    }

    @Test("until a window's worth of answers came, a request counts from its answer's arrival")
    func firstAnswersCountAtArrival() {
        var window = SubmitWindow(limit: 2)
        window.answered(window.record(0), at: 40 * millisecond)   // a new connection's slow first answer
        window.answered(window.record(0), at: 41 * millisecond)   // second answer: the fastest, 40 ms, is trusted now
        #expect(window.nextAllowed(now: 0) == 40 * millisecond + SubmitWindow.window)
        let third = SubmitWindow.window + 40 * millisecond
        window.answered(window.record(third), at: third + 45 * millisecond)    // counted 40 ms before its answer
        _ = window.record(2 * SubmitWindow.window + 40 * millisecond)
        #expect(window.nextAllowed(now: 0) == third + 5 * millisecond + SubmitWindow.window)
    }

    @Test("an earlier request answered after later ones still counts: the window takes the latest")
    func answersOutOfOrder() {
        var window = SubmitWindow(limit: 2)
        let first = window.record(0)
        window.answered(window.record(0), at: millisecond)
        window.answered(first, at: 300 * millisecond)
        let third = 299 * millisecond + SubmitWindow.window
        #expect(window.nextAllowed(now: 0) == third)
        window.answered(window.record(third), at: third)
        // The oldest left is the second (counted at 0), but the first, gone, counted later.
        #expect(window.nextAllowed(now: 0) == third)
    }

    @Test("a request that ends without an answer counts from when it ended")
    func abandonedCountsFromItsEnd() {
        var window = SubmitWindow(limit: 1)
        window.abandoned(window.record(0), at: 30 * millisecond)
        #expect(window.nextAllowed(now: 0) == 30 * millisecond + SubmitWindow.window)
    }

    /// A sender that always has requests ready, and a receiver that stops reading for 50 ms
    /// every 370 ms: what the sender writes meanwhile waits in the receiver's socket and is
    /// stamped when read, all at the stall's end, the way the simulator's kernel stamps a
    /// coalesced buffer. Counted at the sender's instants such a clump sits closer than a
    /// second to what the sender writes a second later; counted from the answers it does not.
    @Test("with a receiver that falls behind, no second of the receiver's holds more than the limit")
    func receiverBehind() throws {
        let limit = 10
        func received(writtenAt instant: UInt64) -> UInt64 {
            let phase = instant % (370 * millisecond)
            let stall = 300 * millisecond
            return phase >= stall && phase < stall + 50 * millisecond ? instant - phase + stall + 50 * millisecond : instant
        }
        var window = SubmitWindow(limit: limit)
        var answers: [(at: UInt64, sequence: Int)] = []
        var receipts: [UInt64] = []
        var now: UInt64 = 0
        while now < 6 * second {
            answers.sort { $0.at < $1.at }
            while let next = answers.first, next.at <= now {
                window.answered(next.sequence, at: next.at)
                answers.removeFirst()
            }
            guard let allowed = window.nextAllowed(now: now) else {
                now = try #require(answers.first).at
                continue
            }
            if allowed > now {
                now = allowed
                continue
            }
            let receipt = received(writtenAt: now)
            receipts.append(receipt)
            answers.append((receipt + 200_000, window.record(now)))
            now += 3 * millisecond
        }
        receipts.sort()
        #expect(receipts.count >= 5 * limit)
        for index in receipts.indices.dropLast(limit) {
            #expect(receipts[index + limit] - receipts[index] >= second, "request \(index + limit) received within a second of \(index)")
        }
    }
}
