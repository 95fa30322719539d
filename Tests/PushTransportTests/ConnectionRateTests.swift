@testable import PushTransport
import Testing

@Suite("Connection rate: N per second, paced evenly")
struct ConnectionRateTests {
    /// Sends a backlog as fast as the rate allows, each start `lateness` after it was allowed.
    private func backlog(limit: Int, count: Int, lateness: Duration = .zero) -> [PoolInstant] {
        let origin = PoolInstant.now
        var rate = ConnectionRate(limit: limit)
        var now = origin
        var starts: [PoolInstant] = []
        while starts.count < count {
            now = rate.earliestStart(at: now) + (starts.isEmpty ? .zero : lateness)
            rate.record(at: now)
            starts.append(now)
        }
        return starts
    }

    @Test("a backlog goes out one start per interval, never more than N per second")
    func pacing() {
        let starts = backlog(limit: 20, count: 100)
        let interval = ConnectionRate.window / 20
        for index in 1..<starts.count {
            #expect(starts[index - 1].duration(to: starts[index]) == interval, "uneven at \(index)")
        }
        for index in 20..<starts.count {
            #expect(starts[index - 20].advanced(by: .seconds(1)) < starts[index], "more than 20 within a second")
        }
        // Sustained: at least 99% of 20/s.
        let rate = Double(starts.count - 1) / starts[0].duration(to: starts[99]).seconds
        #expect(rate >= 19.8)
    }

    @Test("starts that are each a little late are made up: the rate does not sag")
    func latenessIsMadeUp() {
        // 3 ms late every time at 100/s (a 10 ms interval): within the catch-up allowance.
        let starts = backlog(limit: 100, count: 1000, lateness: .milliseconds(3))
        let steady = Double(999 - 100) / starts[100].duration(to: starts[999]).seconds
        #expect(steady >= 99.0, "sustained \(steady)/s")
        for index in 100..<starts.count {
            #expect(starts[index - 100].advanced(by: .seconds(1)) < starts[index], "more than 100 within a second")
        }
    }

    @Test("an idle connection banks no burst")
    func idleBanksNothing() {
        let origin = PoolInstant.now
        var rate = ConnectionRate(limit: 100)
        rate.record(at: origin)
        let later = origin.advanced(by: .seconds(5))
        var starts: [PoolInstant] = []
        var now = later
        for _ in 0..<(ConnectionRate.catchUp + 4) {
            now = rate.earliestStart(at: now)
            rate.record(at: now)
            starts.append(now)
        }
        // The first start comes at once, then up to `catchUp` more made up, then the pace.
        #expect(starts.filter { $0 == later }.count == ConnectionRate.catchUp + 1)
        #expect(starts[ConnectionRate.catchUp + 1] == later.advanced(by: ConnectionRate.window / 100))
    }

    @Test("a restarted schedule has nothing to catch up: after the first answer, even spacing at once")
    func restartedScheduleBanksNothing() {
        let origin = PoolInstant.now
        var rate = ConnectionRate(limit: 100)
        rate.record(at: origin)                         // the connection's single first request
        let answered = origin.advanced(by: .milliseconds(90))
        rate.restartSchedule(at: answered)
        var now = answered
        var starts: [PoolInstant] = []
        for _ in 0..<3 {
            now = rate.earliestStart(at: now)
            rate.record(at: now)
            starts.append(now)
        }
        let interval = ConnectionRate.window / 100
        #expect(starts == [answered, answered.advanced(by: interval), answered.advanced(by: interval * 2)])

        // An answer quicker than one interval keeps the pace: no second start before it.
        var quick = ConnectionRate(limit: 100)
        quick.record(at: origin)
        quick.restartSchedule(at: origin.advanced(by: .milliseconds(1)))
        #expect(quick.earliestStart(at: origin.advanced(by: .milliseconds(1))) == origin.advanced(by: interval))
    }

    @Test("a lowered limit lowers the window and the pace; unlimited never waits")
    func limits() {
        let origin = PoolInstant.now
        var rate = ConnectionRate(limit: 100)
        rate.setLimit(10)
        #expect(rate.limit == 10)
        rate.record(at: origin)
        #expect(rate.earliestStart(at: origin) == origin.advanced(by: ConnectionRate.window / 10))
        var unlimited = ConnectionRate(limit: nil)
        for _ in 0..<1000 { unlimited.record(at: origin) }
        #expect(unlimited.earliestStart(at: origin) == origin)
    }
}

private extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
