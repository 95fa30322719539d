@testable import PushTransport
import PGPushCore
import Testing

@Suite("Sliding window: at most N sends in any one-second window, waits computed exactly")
struct SlidingWindowRateLimitTests {
    typealias Instant = ContinuousClock.Instant
    let origin = ContinuousClock.now

    @Test("the first N start at once; the next waits exactly until the first is one second old")
    func firstWindow() {
        var limit = SlidingWindowRateLimit<Instant>(limit: 3)
        let starts = (0..<3).map { limit.reserve(at: origin.advanced(by: .milliseconds($0 * 100))) }
        #expect(starts == [origin, origin.advanced(by: .milliseconds(100)), origin.advanced(by: .milliseconds(200))])
        #expect(limit.earliestStart(at: origin.advanced(by: .milliseconds(300))) == origin.advanced(by: .seconds(1)))
        #expect(limit.reserve(at: origin.advanced(by: .milliseconds(300))) == origin.advanced(by: .seconds(1)))
        // A reservation made far later does not wait.
        #expect(limit.reserve(at: origin.advanced(by: .seconds(5))) == origin.advanced(by: .seconds(5)))
    }

    @Test("a long random schedule: never more than N in any window, every wait is the minimum possible",
          arguments: [1, 7, 100])
    func randomSchedule(cap: Int) {
        var generator = SeededRandomNumberGenerator(seed: UInt64(cap) * 7919)
        var limit = SlidingWindowRateLimit<Instant>(limit: cap)
        var arrival = origin
        var arrivals: [Instant] = []
        var starts: [Instant] = []
        for _ in 0..<5000 {
            // Bursts and gaps: mostly close together, sometimes a pause of up to 2 s.
            let gap = Int.random(in: 0...100, using: &generator) < 95
                ? Duration.microseconds(Int.random(in: 0...(1_000_000 / cap), using: &generator))
                : Duration.milliseconds(Int.random(in: 0...2000, using: &generator))
            arrival = arrival.advanced(by: gap)
            arrivals.append(arrival)
            starts.append(limit.reserve(at: arrival))
        }
        // Any window [t, t + 1 s) holds at most `cap` starts: check at every start instant,
        // the only places a maximum can begin.
        var maximum = 0
        var tail = 0
        for head in starts.indices {
            while starts[tail].advanced(by: .seconds(1)) <= starts[head] { tail += 1 }
            maximum = max(maximum, head - tail + 1)
        }
        #expect(maximum <= cap)
        #expect(maximum == cap, "the schedule should have filled the window at least once")
        for index in starts.indices {
            #expect(starts[index] >= arrivals[index])
            if starts[index] > arrivals[index] {
                // Waited: exactly until the cap-th previous start turned one second old.
                #expect(index >= cap)
                if index >= cap { #expect(starts[index] == starts[index - cap].advanced(by: .seconds(1))) }
            }
        }
    }

    @Test("unlimited (nil or 0) never waits")
    func unlimited() {
        for cap in [nil, 0] as [Int?] {
            var limit = SlidingWindowRateLimit<Instant>(limit: cap)
            #expect(limit.isUnlimited)
            for index in 0..<10_000 {
                let now = origin.advanced(by: .nanoseconds(index))
                #expect(limit.reserve(at: now) == now)
            }
        }
    }

    @Test("a lowered limit applies to the next reservation, and can be restored")
    func loweredLimit() {
        var limit = SlidingWindowRateLimit<Instant>(limit: 10)
        limit.setLimit(5)
        let starts = (0..<15).map { _ in limit.reserve(at: origin) }
        #expect(starts[0..<5].allSatisfy { $0 == origin })
        #expect(starts[5..<10].allSatisfy { $0 == origin.advanced(by: .seconds(1)) })
        #expect(starts[10..<15].allSatisfy { $0 == origin.advanced(by: .seconds(2)) })
        limit.setLimit(100)
        #expect(limit.limit == 10, "never above the configured cap")
    }
}

@Suite("429 throttle: halves a connection's rate when 429s spread, recovers in steps")
struct TooManyRequestsThrottleTests {
    let origin = ContinuousClock.now

    @Test("more than 10 of the last 100 answers being 429 halves the rate; a step later it climbs back")
    func halveAndRecover() {
        var throttle = TooManyRequestsThrottle<ContinuousClock.Instant>(configuredRate: 100)
        var changes: [Int] = []
        for index in 0..<100 {
            if let rate = throttle.record(tooManyRequests: index % 10 == 9, at: origin) { changes.append(rate) }
        }
        #expect(changes.isEmpty, "10 of 100 is not more than 10%")
        if let rate = throttle.record(tooManyRequests: true, at: origin) { changes.append(rate) }
        #expect(changes == [50])
        #expect(throttle.isThrottled)
        // Within the step, 429s do not halve again ...
        for _ in 0..<20 { #expect(throttle.record(tooManyRequests: true, at: origin.advanced(by: .seconds(5))) == nil) }
        // ... after it, if they still spread, they do.
        #expect(throttle.record(tooManyRequests: true, at: origin.advanced(by: .seconds(11))) == 25)
        // Quiet steps raise the rate by a tenth of the configured rate each.
        var now = origin.advanced(by: .seconds(11))
        var rates: [Int] = []
        for _ in 0..<10 {
            now = now.advanced(by: .seconds(10))
            if let rate = throttle.record(tooManyRequests: false, at: now) { rates.append(rate) }
        }
        #expect(rates == [35, 45, 55, 65, 75, 85, 95, 100])
        #expect(!throttle.isThrottled)
    }
}

@Suite("Reconnect backoff")
struct ReconnectBackoffTests {
    @Test("doubles from the initial delay up to the maximum; jitter stays in the upper half")
    func doubling() {
        let backoff = ReconnectBackoff.standard
        #expect(backoff.ceiling(afterFailures: 0) == .zero)
        #expect((1...8).map { backoff.ceiling(afterFailures: $0) }
                == [1, 2, 4, 8, 16, 32, 60, 60].map { Duration.seconds($0) })
        #expect(backoff.ceiling(afterFailures: 1000) == .seconds(60))
        var generator = SeededRandomNumberGenerator(seed: 42)
        for failures in 1...10 {
            let ceiling = backoff.ceiling(afterFailures: failures)
            for _ in 0..<50 {
                let delay = backoff.delay(afterFailures: failures, using: &generator)
                #expect(delay >= ceiling / 2 && delay <= ceiling)
            }
        }
    }
}
