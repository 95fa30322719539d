@testable import PushWorker
import Testing

struct DoorbellTests {
    /// A wait ended by a ring cancels its timer; the cancelled timer must not ring in
    /// turn, or the next wait returns at once and a backoff or idle wait is skipped.
    @Test func aRingDoesNotLeaveAStaleRingForTheNextWait() async throws {
        let doorbell = Doorbell()
        for _ in 0..<5 {
            let waiting = Task { await doorbell.wait(timeout: .seconds(60)) }
            try await Task.sleep(for: .milliseconds(50))
            doorbell.ring()
            await waiting.value
            // Give a cancelled timer every chance to ring before the next wait starts.
            try await Task.sleep(for: .milliseconds(100))
            let started = ContinuousClock.now
            await doorbell.wait(timeout: .milliseconds(500))
            #expect(started.duration(to: .now) >= .milliseconds(450), "the wait returned early: a stale ring")
        }
    }
}
