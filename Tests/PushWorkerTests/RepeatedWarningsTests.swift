import Locking
@testable import PushWorker
import Testing

/// A warning that repeats (the database is down: every claim, heartbeat, renewal and
/// outcome write fails) is logged once, then summarised at most once per interval.
struct RepeatedWarningsTests {
    /// A log whose lines stay in memory, and a clock the test moves by hand.
    final class Harness: Sendable {
        let lines = Locked<[String]>([])
        let now = Locked(ContinuousClock.now)
        let warnings: RepeatedWarnings

        init(interval: Duration = .seconds(30)) {
            let lines = self.lines, now = self.now
            warnings = RepeatedWarnings(log: Log(sink: { line in lines.withLock { $0.append(line) } }),
                                        interval: interval, now: { now.withLock { $0 } })
        }

        func advance(_ duration: Duration) { now.withLock { $0 += duration } }
        func count(_ text: String) -> Int { lines.withLock { $0.filter { $0.contains(text) }.count } }
    }

    @Test func firstOccurrenceThenOneSummaryPerInterval() {
        let harness = Harness()
        // 45 failures a second for 65 seconds.
        for _ in 0..<(65 * 45) {
            harness.warnings.warning("claim_failed", key: "shop", ["app": "shop", "error": "connection refused"])
            harness.advance(.milliseconds(1000 / 45))
        }
        let lines = harness.lines.withLock { $0 }
        #expect(lines.count == 3, "\(lines)")
        #expect(lines.first?.contains("claim_failed app=shop error=\"connection refused\"") == true)
        #expect(!(lines.first?.contains("repeated") ?? true), "the first occurrence is logged as it is")
        // Every occurrence after the first is counted in exactly one summary.
        let counted = lines.dropFirst().compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("repeated=") }.flatMap { Int($0.dropFirst("repeated=".count)) }
        }
        #expect(counted.count == 2, "\(lines)")
        #expect(counted.allSatisfy { $0 > 1000 }, "\(counted)")
        #expect(lines.dropFirst().allSatisfy { $0.contains("in_last=") })
    }

    @Test func keysAndEventsAreCountedApart() {
        let harness = Harness()
        for _ in 0..<10 {
            harness.warnings.warning("claim_failed", key: "shop", ["app": "shop"])
            harness.warnings.warning("claim_failed", key: "news", ["app": "news"])
            harness.warnings.warning("heartbeat_failed", ["error": "x"])
            harness.advance(.seconds(1))
        }
        #expect(harness.count("claim_failed app=shop") == 1)
        #expect(harness.count("claim_failed app=news") == 1)
        #expect(harness.count("heartbeat_failed") == 1)
    }

    @Test func recoveryReportsTheRestAndTheNextFailureIsLoggedAtOnce() {
        let harness = Harness()
        for _ in 0..<5 {
            harness.warnings.warning("outcome_write_failed", ["count": 3])
            harness.advance(.seconds(1))
        }
        #expect(harness.count("outcome_write_failed") == 1)
        harness.warnings.recovered("outcome_write_failed")
        #expect(harness.count("repeated=4") == 1, "\(harness.lines.withLock { $0 })")
        harness.warnings.recovered("outcome_write_failed")
        #expect(harness.lines.withLock { $0.count } == 2, "a second recovery adds nothing")
        harness.warnings.warning("outcome_write_failed", ["count": 1])
        #expect(harness.count("outcome_write_failed count=1") == 1, "a failure after recovery is news again")
    }
}
