@testable import HTTP2TLS
import Testing

private let second: UInt64 = 1_000_000_000
private let millisecond: UInt64 = 1_000_000

extension SubmitWindow {
    /// Submitted and written at once.
    mutating func send(_ instant: UInt64) -> Int {
        let sequence = record(instant)
        wrote(at: instant)
        return sequence
    }
}

@Suite("Submit window: at most N requests in any one second the server counts")
struct SubmitWindowTests {
    @Test("a burst answered at once is spread so no one-second window holds more than the limit")
    func burstIsSpread() {
        var window = SubmitWindow(limit: 3)
        var now: UInt64 = 10 * second
        var submitted: [UInt64] = []
        for _ in 0..<10 {
            now = window.nextAllowed(now: now)
            let sequence = window.send(now)
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
            window.answered(window.send(now), at: now + millisecond)
        }
        // The first answer, 1 ms after its request, counts at its arrival.
        #expect(window.nextAllowed(now: 990 * millisecond + 1) == millisecond + SubmitWindow.window)
    }

    @Test("a request counts from no later than the lag allowance after submission, answered or not")
    func unansweredCountsWithinTheAllowance() {
        var window = SubmitWindow(limit: 2)
        let first = window.send(0)
        window.answered(window.send(0), at: millisecond)
        #expect(window.nextAllowed(now: 0) == SubmitWindow.lagAllowance + SubmitWindow.window)
        window.answered(first, at: 5 * second)   // a slow answer costs no more
        #expect(window.nextAllowed(now: 0) == SubmitWindow.lagAllowance + SubmitWindow.window)
    }

    @Test("a request counts from when its bytes were written, not from when it was submitted")
    func countsFromTheWrite() {
        var window = SubmitWindow(limit: 1)
        let sequence = window.record(0)
        window.wrote(at: 3 * millisecond)                                 // the I/O thread was held up
        window.answered(sequence, at: 3 * millisecond)
        #expect(window.nextAllowed(now: 0) == 3 * millisecond + SubmitWindow.window)
    }

    @Test("a request not yet written counts as leaving now, also once it left the window's memory")
    func unwrittenCountsAsNow() {
        var window = SubmitWindow(limit: 1)
        _ = window.record(0)                                          // the socket takes nothing
        #expect(window.nextAllowed(now: 0) == SubmitWindow.lagAllowance + SubmitWindow.window)
        let later = 2 * second
        _ = window.record(later)                                      // the first leaves the ring unwritten
        window.wrote(at: later)
        #expect(window.nextAllowed(now: later) == later + SubmitWindow.lagAllowance + SubmitWindow.window)
    }

    @Test("an answer counts from its arrival less the fastest round trip")
    func answerCountsFromArrival() {
        var window = SubmitWindow(limit: 1)
        window.answered(window.send(0), at: 2 * millisecond)          // fastest round trip: 2 ms
        #expect(window.nextAllowed(now: 0) == SubmitWindow.window)       // counted at 0
        window.answered(window.send(SubmitWindow.window), at: SubmitWindow.window + 7 * millisecond)
        #expect(window.nextAllowed(now: 0) == SubmitWindow.window + 5 * millisecond + SubmitWindow.window)
    }

    @Test("until a window's worth of answers came, a request counts from its answer's arrival")
    func firstAnswersCountAtArrival() {
        var window = SubmitWindow(limit: 2)
        window.answered(window.send(0), at: 8 * millisecond)   // a new connection's slow first answer
        window.answered(window.send(0), at: 9 * millisecond)   // second answer: the fastest, 8 ms, is trusted now
        #expect(window.nextAllowed(now: 0) == 8 * millisecond + SubmitWindow.window)
        let third = SubmitWindow.window + 8 * millisecond
        window.answered(window.send(third), at: third + 9 * millisecond)    // counted 8 ms before its answer
        _ = window.send(third)
        #expect(window.nextAllowed(now: 0) == third + millisecond + SubmitWindow.window)
    }

    @Test("an earlier request answered after later ones still counts: the window takes the latest")
    func answersOutOfOrder() {
        var window = SubmitWindow(limit: 2)
        let first = window.send(0)
        window.answered(window.send(0), at: millisecond)
        window.answered(first, at: 6 * millisecond)              // counted at 5 ms
        let third = 5 * millisecond + SubmitWindow.window
        #expect(window.nextAllowed(now: 0) == third)
        window.answered(window.send(0), at: 0)
        // The oldest left is the second (counted at 1 ms), but the first, gone, counted later.
        #expect(window.nextAllowed(now: 0) == third)
    }

    @Test("a request that ends without an answer counts from when it ended")
    func abandonedCountsFromItsEnd() {
        var window = SubmitWindow(limit: 1)
        window.abandoned(window.send(0), at: 4 * millisecond)
        #expect(window.nextAllowed(now: 0) == 4 * millisecond + SubmitWindow.window)
    }

    /// A sender that always has requests ready, and a receiver that stops reading for 8 ms
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
            return phase >= stall && phase < stall + 8 * millisecond ? instant - phase + stall + 8 * millisecond : instant
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
            let allowed = window.nextAllowed(now: now)
            if allowed > now {
                now = min(allowed, answers.first?.at ?? allowed)   // an answer may allow it sooner
                continue
            }
            let receipt = received(writtenAt: now)
            receipts.append(receipt)
            answers.append((receipt + 200_000, window.send(now)))
            now += 3 * millisecond
        }
        receipts.sort()
        #expect(receipts.count >= 5 * limit)
        for index in receipts.indices.dropLast(limit) {
            #expect(receipts[index + limit] - receipts[index] >= second, "request \(index + limit) received within a second of \(index)")
        }
    }
}
