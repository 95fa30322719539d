/// Slows a connection down when 429 TooManyRequests spread over its answers.
///
/// Apple publishes no request rate, and a 429 is about one device token; but when more
/// than `threshold` of the last `sample` answers on a connection are 429s, the pressure is
/// broad, so the connection's rate is halved (down to 1/s at the least) and the sample
/// starts afresh. If 429s still spread after `step` at the lower rate, it is halved again.
/// Once a `step` passes without that, the rate climbs back by a tenth of the configured
/// rate per `step`: from half to full in five steps (50 s with the defaults).
package struct TooManyRequestsThrottle<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration, Instant: Sendable {
    package let configuredRate: Int
    package private(set) var currentRate: Int
    package let sample: Int
    package let threshold: Int
    package let step: Duration
    private var answers: [Bool] = []
    private var next = 0
    private var tooManyInSample = 0
    private var lastChange: Instant?

    package init(configuredRate: Int, sample: Int = 100, threshold: Int = 10, step: Duration = .seconds(10)) {
        self.configuredRate = max(configuredRate, 1)
        self.currentRate = max(configuredRate, 1)
        self.sample = max(sample, 1)
        self.threshold = max(threshold, 0)
        self.step = step
    }

    package var isThrottled: Bool { currentRate < configuredRate }

    /// Records one answer; returns the new rate when it changes.
    package mutating func record(tooManyRequests: Bool, at now: Instant) -> Int? {
        remember(tooManyRequests)
        let stepPassed = lastChange.map { $0.advanced(by: step) <= now } ?? true
        if tooManyInSample > threshold {
            guard currentRate > 1, !isThrottled || stepPassed else { return nil }
            currentRate = max(1, currentRate / 2)
            lastChange = now
            answers.removeAll(keepingCapacity: true)
            next = 0
            tooManyInSample = 0
            return currentRate
        }
        if isThrottled && stepPassed {
            currentRate = min(configuredRate, currentRate + max(1, configuredRate / 10))
            lastChange = now
            return currentRate
        }
        return nil
    }

    private mutating func remember(_ tooMany: Bool) {
        if answers.count < sample {
            answers.append(tooMany)
        } else {
            if answers[next] { tooManyInSample -= 1 }
            answers[next] = tooMany
            next = (next + 1) % sample
        }
        if tooMany { tooManyInSample += 1 }
    }
}
