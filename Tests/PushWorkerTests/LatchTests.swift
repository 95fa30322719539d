@testable import PushWorker
import Foundation
import Synchronization
import Testing

struct LatchTests {
    /// A timeout whose timer fires before the wait has stored its continuation must still
    /// end that wait. It once did not: the timer found no waiter to release, the wait then
    /// stored its continuation and slept until the worker stopped. The claim loop's
    /// few-millisecond waits met it on a loaded machine, and the worker stopped claiming
    /// with rows queued. Here the wait is held back until its 1 ms timer has surely fired.
    @Test func aTimeoutThatFiresBeforeTheWaitRegistersStillEndsIt() async throws {
        let latch = Latch()
        let watchdog = Ended()
        // Opens the latch if the wait is stuck, so the test ends either way. A timer, not a
        // polling loop: when the machine stalls the test's threads, the wait's 1 ms timer
        // still comes due long before this one.
        let opener = Task {
            try await Task.sleep(for: .seconds(120))
            watchdog.flag.store(true, ordering: .relaxed)
            latch.open()
        }
        await latch.wait(timeout: .milliseconds(1)) { Thread.sleep(forTimeInterval: 0.1) }
        opener.cancel()
        let openedByWatchdog = watchdog.flag.load(ordering: .relaxed)
        #expect(!openedByWatchdog, "the wait outlived its timeout until the latch opened")
    }

    private final class Ended: Sendable {
        let flag = Atomic<Bool>(false)
    }

    @Test func openEndsEveryWaitAndLaterWaitsReturnAtOnce() async throws {
        let latch = Latch()
        let waiting = (0..<3).map { _ in Task { await latch.wait() } }
        #expect(!latch.isOpen)
        latch.open()
        for wait in waiting { await wait.value }
        let started = ContinuousClock.now
        await latch.wait(timeout: .seconds(60))
        #expect(started.duration(to: .now) < .seconds(30))
        #expect(latch.isOpen)
    }
}
