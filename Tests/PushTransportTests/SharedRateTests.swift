@testable import PushTransport
import Testing

@Suite("Shared rate: this worker's share of rate_per_app, only while its lease holds")
struct SharedRateTests {
    typealias Instant = ContinuousClock.Instant

    /// Reserves starts for a backlog asked for at `now` until the rate gives none or `count` are taken.
    private func starts(_ rate: inout SharedRate, at now: Instant, count: Int) -> [Instant] {
        var starts: [Instant] = []
        while starts.count < count, let start = rate.reserve(at: now) { starts.append(start) }
        return starts
    }

    @Test("no send before a share is granted, nor with a share of 0")
    func nothingWithoutAShare() {
        let now = ContinuousClock.now
        var rate = SharedRate(rate: 150)
        #expect(rate.reserve(at: now) == nil)
        rate.granted(share: 0, askedAt: now, lease: .seconds(3))
        #expect(rate.reserve(at: now) == nil)
    }

    @Test("a share of 75: at most 75 starts in any 1.05 s, evenly paced")
    func theShareCapsEveryWindow() {
        let now = ContinuousClock.now
        var rate = SharedRate(rate: 150)
        rate.granted(share: 75, askedAt: now, lease: .seconds(60))
        let taken = starts(&rate, at: now, count: 300)
        #expect(taken.count == 300)
        for index in 75..<taken.count {
            #expect(taken[index - 75].advanced(by: SharedRate.window) <= taken[index], "more than 75 within the window at \(index)")
        }
        #expect(taken[1] - taken[0] == SharedRate.window / 75)
    }

    @Test("the lease ends the share: no start at or after askedAt + lease, until the next grant")
    func theLeaseBoundsTheStarts() {
        let now = ContinuousClock.now
        var rate = SharedRate(rate: 100)
        rate.granted(share: 100, askedAt: now, lease: .seconds(1))
        let taken = starts(&rate, at: now, count: 1000)
        #expect(taken.count == 96 && taken.allSatisfy { $0 < now + .seconds(1) }, "\(taken.count)")
        rate.granted(share: 100, askedAt: now + .seconds(1), lease: .seconds(1))
        #expect(rate.reserve(at: now + .seconds(1)) != nil)
    }

    @Test("a lowered share holds at once over the last window's starts; a share above the rate is the rate")
    func loweringHoldsAtOnce() {
        let now = ContinuousClock.now
        var rate = SharedRate(rate: 150)
        rate.granted(share: 1000, askedAt: now, lease: .seconds(60))
        #expect(rate.share == 150)
        let before = starts(&rate, at: now, count: 100)
        rate.granted(share: 50, askedAt: now, lease: .seconds(60))
        let after = starts(&rate, at: now, count: 50)
        let all = before + after
        #expect(after.count == 50)
        for index in before.count..<all.count {
            #expect(all[index - 50].advanced(by: SharedRate.window) <= all[index], "more than 50 within the window at \(index)")
        }
    }
}
