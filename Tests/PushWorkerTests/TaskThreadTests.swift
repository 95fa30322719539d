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
            ids[name] = TaskThread.shared.set(after: delay) { fired.withLock { $0.append((name, .now)) } }
        }
        TaskThread.shared.cancel(ids[4]!)
        TaskThread.shared.cancel(ids[1]!)
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
}

extension TaskThreadTests {
    /// Many alarms (every `Task.sleep` of `pgpush run` is one): each one not cancelled fires,
    /// in the order they are due, and none cancelled does.
    @Test func manyAlarmsFireInTheOrderTheyAreDue() async throws {
        var random = SystemRandomNumberGenerator()
        let start = ContinuousClock.now
        let dues = (0..<300).map { _ in start + .milliseconds(Int.random(in: 50...400, using: &random)) }
        let fired = Locked<[Int]>([])
        var alarms: [TaskThread.Alarm] = []
        for (index, due) in dues.enumerated() {
            alarms.append(TaskThread.shared.set(after: ContinuousClock.now.duration(to: due)) { fired.withLock { $0.append(index) } })
        }
        let cancelled = Set(stride(from: 0, to: dues.count, by: 3))
        for index in cancelled { TaskThread.shared.cancel(alarms[index]) }
        let expected = dues.count - cancelled.count
        let deadline = ContinuousClock.now + .seconds(60)
        while fired.withLock({ $0.count < expected }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        // Room for a cancelled one to fire late, had it not been cancelled.
        try await Task.sleep(for: .milliseconds(100))
        let order = fired.withLock { $0 }
        #expect(Set(order) == Set(dues.indices).subtracting(cancelled))
        #expect(order.count == expected)
        #expect(zip(order, order.dropFirst()).allSatisfy { dues[$0] <= dues[$1] }, "fired out of order")
    }
}
