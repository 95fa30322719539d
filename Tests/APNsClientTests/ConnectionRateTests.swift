@testable import APNsClient
import Testing

@Suite("Connection rate: N per second, paced in tenths")
struct ConnectionRateTests {
    @Test("a backlog goes out in small bursts per tenth of the window, N per window, never more")
    func pacing() {
        let origin = ContinuousClock.now
        var rate = ConnectionRate(limit: 20)
        var now = origin
        var starts: [ContinuousClock.Instant] = []
        // Send as soon as allowed, as a backlog would.
        while starts.count < 100 {
            now = rate.earliestStart(at: now)
            rate.record(at: now)
            starts.append(now)
        }
        let slice = ConnectionRate.window / ConnectionRate.slices
        // A tenth may carry a fifth more than its even share (3 of 20/s), so a late tenth can catch up.
        #expect(starts[0] == origin && starts[2] == origin)
        #expect(starts[3] == origin.advanced(by: slice) && starts[5] == origin.advanced(by: slice))
        #expect(starts[20] == origin.advanced(by: ConnectionRate.window))
        for index in 20..<starts.count {
            #expect(starts[index - 20].advanced(by: .seconds(1)) < starts[index], "more than 20 within a second")
        }
        // Sustained: 100 sends in 5 windows, at least 99% of 20/s.
        let span = origin.duration(to: starts[99].advanced(by: slice))
        #expect(span <= .seconds(5) / 0.99)
    }

    @Test("a lowered limit lowers both windows; unlimited never waits")
    func limits() {
        let origin = ContinuousClock.now
        var rate = ConnectionRate(limit: 100)
        rate.setLimit(10)
        #expect(rate.limit == 10)
        rate.record(at: origin)
        rate.record(at: origin)   // two per tenth at 10/s
        #expect(rate.earliestStart(at: origin) == origin.advanced(by: ConnectionRate.window / ConnectionRate.slices))
        var unlimited = ConnectionRate(limit: nil)
        for _ in 0..<1000 { unlimited.record(at: origin) }
        #expect(unlimited.earliestStart(at: origin) == origin)
    }
}
