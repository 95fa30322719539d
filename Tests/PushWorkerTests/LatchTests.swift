import PGPushTestSupport
@testable import PushWorker
import Foundation
import Synchronization
import Testing

struct LatchTests {
    /// A timeout whose timer fires before the wait has registered must still end that
    /// wait. It once did not: the timer found no waiter to release, the wait then
    /// registered and slept until the worker stopped. The claim loop's few-millisecond
    /// waits hit it on a loaded machine, and the worker stopped claiming with rows queued.
    @Test func aTimeoutThatFiresBeforeTheWaitRegistersStillEndsIt() async throws {
        let latch = Latch()
        let tasks = 8, waitsPerTask = 400
        let finished = Flags()
        // Threads that keep both cores busy, so the scheduler preempts a wait between
        // starting its timer and registering, as a loaded machine does.
        let spinners = (0..<3).map { _ in
            Thread { while finished.spinning.load(ordering: .relaxed) {} }
        }
        spinners.forEach { $0.start() }
        defer { finished.spinning.store(false, ordering: .relaxed) }
        let waiting = (0..<tasks).map { _ in
            Task {
                for _ in 0..<waitsPerTask {
                    await latch.wait(timeout: .microseconds(50))
                    finished.count.add(1, ordering: .relaxed)
                }
            }
        }
        let total = tasks * waitsPerTask
        let allEnded = try await eventually(timeout: .seconds(30)) { finished.count.load(ordering: .relaxed) == total }
        let ended = finished.count.load(ordering: .relaxed)
        latch.open()  // lets a stuck wait go, so the test ends either way
        for wait in waiting { await wait.value }
        #expect(allEnded, "\(total - ended) of \(total) waits outlived their timeout")
    }

    private final class Flags: Sendable {
        let count = Atomic<Int>(0)
        let spinning = Atomic<Bool>(true)
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
