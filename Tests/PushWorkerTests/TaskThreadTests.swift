import Foundation
import Locking
@testable import PushWorker
import Testing

struct TaskThreadTests {
    /// Alarms fire in the order they are due whatever the order they were set in, never
    /// before they are due, and a cancelled one never fires (an alarm set after it and due
    /// later has fired, so it had every chance to).
    @Test func alarmsFireWhenDueInOrderAndCancelledOnesNever() async throws {
        let fired = Locked<[(Int, ContinuousClock.Instant)]>([])
        let set = ContinuousClock.now
        let delays: [Int: Duration] = [1: .milliseconds(300), 2: .milliseconds(100), 3: .milliseconds(200),
                                       4: .milliseconds(150), 5: .milliseconds(400)]
        var ids: [Int: TaskThread.Alarm] = [:]
        for (name, delay) in delays.sorted(by: { $0.key < $1.key }) {
            ids[name] = TaskThread.shared.setAlarm(after: delay) { fired.withLock { $0.append((name, .now)) } }
        }
        ids[4]!.cancel()
        ids[1]!.cancel()
        // Waits on the state: the last alarm due has fired (with room for a loaded machine).
        let deadline = ContinuousClock.now + .seconds(60)
        while fired.withLock({ !$0.contains { $0.0 == 5 } }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let calls = fired.withLock { $0 }
        #expect(calls.map(\.0) == [2, 3, 5])
        for (name, at) in calls {
            #expect(set.duration(to: at) >= delays[name]!, "alarm \(name) fired early")
        }
    }

    /// A wait whose alarm is due before a ring returns at its timeout; the doorbell is then
    /// not left rung (the next wait sleeps its full time).
    @Test func aDoorbellWaitEndsAtItsTimeoutAndLeavesNoRing() async throws {
        let doorbell = Doorbell()
        let started = ContinuousClock.now
        await doorbell.wait(timeout: .milliseconds(100))
        #expect(started.duration(to: .now) >= .milliseconds(100))
        let again = ContinuousClock.now
        await doorbell.wait(timeout: .milliseconds(300))
        #expect(again.duration(to: .now) >= .milliseconds(300), "the second wait returned early")
    }

    /// A task that prefers the thread runs there, and so do its child tasks, also after a
    /// continuation was resumed from another thread and after an alarm (set on the thread,
    /// the task's `current`) ended a wait.
    @Test func tasksThatPreferTheThreadRunOnIt() async {
        let thread = TaskThread(name: "test-tasks")
        defer { thread.end() }
        let places = await TaskThread.$current.withValue(thread) {
          await withTaskExecutorPreference(thread) { () async -> [Bool] in
            var places = [thread.isCurrent]
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                Thread.detachNewThread { continuation.resume() }
            }
            places.append(thread.isCurrent)
            await Doorbell().wait(timeout: .milliseconds(10))
            places.append(thread.isCurrent)
            let children = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<4 { group.addTask { thread.isCurrent } }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            return places + children
          }
        }
        #expect(places == Array(repeating: true, count: 7))
        #expect(!thread.isCurrent)
    }
}

extension TaskThreadTests {
    /// After `end()` nothing is lost: a wait that sets its alarm on the ended thread still
    /// ends at its timeout, and a task that prefers the thread still runs (on the pool).
    @Test func anEndedThreadHandsItsWorkOn() async {
        let thread = TaskThread(name: "test-ended")
        thread.end()
        let started = ContinuousClock.now
        let ranOnThread = await TaskThread.$current.withValue(thread) {
            await withTaskExecutorPreference(thread) { () async -> Bool in
                await Doorbell().wait(timeout: .milliseconds(50))
                return thread.isCurrent
            }
        }
        #expect(started.duration(to: .now) >= .milliseconds(50))
        #expect(!ranOnThread)
    }
}
