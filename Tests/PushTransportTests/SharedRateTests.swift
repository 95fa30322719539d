@testable import PushTransport
import Testing

@Suite("Shared rate: this worker's share of rate_per_app, only while its lease holds")
struct SharedRateTests {
    typealias Instant = ContinuousClock.Instant

    /// A backlog from `now` on: each send goes as soon as the rate lets it, `lateness` after
    /// it was let (a sender woken late), until the rate gives no share or `count` went.
    private func starts(_ rate: inout SharedRate, from now: Instant, count: Int, lateness: Duration = .zero) -> [Instant] {
        var starts: [Instant] = []
        var now = now
        while starts.count < count {
            switch rate.admit(at: now) {
            case .go: starts.append(now)
            case .wait(let until): now = until + lateness
            case .noShare: return starts
            }
        }
        return starts
    }

    @Test("no send before a share is granted, nor with a share of 0")
    func nothingWithoutAShare() {
        let now = ContinuousClock.now
        var rate = SharedRate(rate: 150)
        #expect(rate.admit(at: now) == .noShare)
        rate.granted(share: 0, askedAt: now, lease: .seconds(3))
        #expect(rate.admit(at: now) == .noShare)
    }

    @Test("a share of 75: at most 75 sends in any 1.05 s, evenly paced, also when each goes late")
    func theShareCapsEveryWindow() {
        for lateness in [Duration.zero, .milliseconds(3), .milliseconds(40)] {
            let now = ContinuousClock.now
            var rate = SharedRate(rate: 150)
            rate.granted(share: 75, askedAt: now, lease: .seconds(60))
            let taken = starts(&rate, from: now, count: 300, lateness: lateness)
            #expect(taken.count == 300)
            for index in 75..<taken.count {
                #expect(taken[index - 75].advanced(by: SharedRate.window) <= taken[index], "more than 75 in the window at \(index)")
            }
        }
    }

    @Test("the lease ends the share: nothing goes at or after askedAt + lease, until the next grant")
    func theLeaseBoundsTheStarts() {
        let now = ContinuousClock.now
        var rate = SharedRate(rate: 100)
        rate.granted(share: 100, askedAt: now, lease: .seconds(1))
        let taken = starts(&rate, from: now, count: 1000)
        #expect(taken.count == 96 && taken.allSatisfy { $0 < now + .seconds(1) }, "\(taken.count)")
        #expect(rate.admit(at: now + .seconds(1)) == .noShare)
        rate.granted(share: 100, askedAt: now + .seconds(1), lease: .seconds(1))
        #expect(rate.admit(at: now + .seconds(2) - .milliseconds(1)) == .go)
    }

    @Test("a lowered share holds at once over the last window's sends; a share above the rate is the rate")
    func loweringHoldsAtOnce() {
        let now = ContinuousClock.now
        var rate = SharedRate(rate: 150)
        rate.granted(share: 1000, askedAt: now, lease: .seconds(60))
        #expect(rate.share == 150)
        let before = starts(&rate, from: now, count: 100)
        rate.granted(share: 50, askedAt: now, lease: .seconds(60))
        let after = starts(&rate, from: before.last ?? now, count: 50)
        let all = before + after
        #expect(after.count == 50)
        for index in before.count..<all.count {
            #expect(all[index - 50].advanced(by: SharedRate.window) <= all[index], "more than 50 within the window at \(index)")
        }
    }
}
