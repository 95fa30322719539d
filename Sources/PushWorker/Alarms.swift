import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Calls actions at deadlines, from one thread of its own: the timeouts of the worker's
/// waits (`Doorbell`, `Latch`).
///
/// A timeout as a task sleeping beside the wait (`Task.sleep`) cost thread wake-ups even
/// when the wait ended first, as most do: the timer task had to start, to be cancelled and
/// to finish, and the runtime's timer fired later all the same. At 100 notifications/s the
/// claim loop waits once per notification, and those wake-ups were a fifth of the worker's
/// (BENCHMARKS.md, 0.5.0). Here setting an alarm takes a lock, and wakes the alarm thread
/// only when the new alarm is due before the one it sleeps towards; cancelling takes the
/// lock and wakes nobody (the thread, waking for a cancelled alarm, finds nothing due and
/// sleeps again).
///
/// Actions run on the alarm thread one after the other: they must be short and never block
/// (resuming a continuation is what they are for).
final class Alarms: @unchecked Sendable {
    // @unchecked: `pending` and `target` are touched only between pthread_mutex_lock and
    // _unlock; the condition variable waits on CLOCK_MONOTONIC.
    struct ID: Hashable, Sendable {
        fileprivate let value: UInt64
    }

    private struct Alarm {
        let id: UInt64
        let due: ContinuousClock.Instant
        let action: @Sendable () -> Void
    }

    static let shared = Alarms()

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Due soonest first.
    private var pending: [Alarm] = []
    private var nextID: UInt64 = 0
    /// When the alarm thread wakes next (nil: only when signalled).
    private var target: ContinuousClock.Instant?

    private init() {
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        condition.initialize(to: pthread_cond_t())
        precondition(pthread_cond_init(condition, &attributes) == 0, "pthread_cond_init failed")
        pthread_condattr_destroy(&attributes)
        let thread = Thread { [self] in run() }
        thread.name = "pgpush-alarms"
        thread.start()
    }

    /// Calls `action` once `delay` has passed, unless cancelled first.
    func set(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> ID {
        let due = ContinuousClock.now + max(delay, .zero)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        nextID &+= 1
        let alarm = Alarm(id: nextID, due: due, action: action)
        pending.insert(alarm, at: pending.firstIndex { $0.due > due } ?? pending.endIndex)
        if target.map({ due < $0 }) ?? true { pthread_cond_signal(condition) }
        return ID(value: alarm.id)
    }

    /// The alarm will not be called (unless it already is being called).
    func cancel(_ id: ID) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if let index = pending.firstIndex(where: { $0.id == id.value }) { pending.remove(at: index) }
    }

    private func run() {
        pthread_mutex_lock(mutex)
        while true {
            let now = ContinuousClock.now
            if let first = pending.first, first.due <= now {
                pending.removeFirst()
                pthread_mutex_unlock(mutex)
                first.action()
                pthread_mutex_lock(mutex)
                continue
            }
            target = pending.first?.due
            if let target {
                var deadline = timespec()
                clock_gettime(CLOCK_MONOTONIC, &deadline)
                let (seconds, attoseconds) = now.duration(to: target).components
                var nanoseconds = Int(deadline.tv_nsec) + Int(attoseconds / 1_000_000_000) + 1
                deadline.tv_sec += Int(seconds) + nanoseconds / 1_000_000_000
                nanoseconds %= 1_000_000_000
                deadline.tv_nsec = nanoseconds
                pthread_cond_timedwait(condition, mutex, &deadline)
            } else {
                pthread_cond_wait(condition, mutex)
            }
        }
    }
}
