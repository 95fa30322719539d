import CShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One thread that calls actions at deadlines — the timeouts of the worker's waits
/// (`Doorbell`, `Latch`) — and, in the worker's own process (`pgpush run`), runs every Swift
/// task too, as the concurrency runtime's global executor (`becomeGlobalExecutor()`).
///
/// Why a thread of its own for the timeouts: a timeout as a task sleeping beside the wait
/// (`Task.sleep`) had to start, be cancelled and finish, and the runtime's timer fired
/// later all the same; the claim loop waits once per notification at 100/s. Here setting an
/// alarm takes a lock and wakes the thread only when the new alarm is due before the one it
/// sleeps towards; cancelling wakes nobody (the thread, waking for a cancelled alarm, finds
/// nothing due and sleeps again).
///
/// Why the tasks too: at the rates applications run, thread wake-ups were most of the
/// worker's CPU. On the default pool each step of a send — its start, its resumption by the
/// I/O thread's answer, the claim's return from the database thread, an alarm ending a wait
/// — could land on another of the pool's threads, which it woke for nearly every job: about
/// fourteen sleeps and wake-ups per notification at 100/s (BENCHMARKS.md, 0.5.0). On one
/// thread a job or alarm set by the thread itself wakes nobody, and one wake-up runs every
/// job that arrived meanwhile. Nothing a worker's task does blocks: libpq's calls run on the
/// database executors' queues, sockets on the I/O threads, name lookups on Dispatch.
///
/// Jobs and alarms run one after the other and must not block; an alarm's action only
/// resumes a continuation. Processes that host more than the worker (the tests, the demo's
/// simulators) keep the default pool and use the thread for alarms only.
package final class TaskThread: TaskExecutor, @unchecked Sendable {
    // @unchecked: the vars are touched only between pthread_mutex_lock and _unlock; the
    // condition variable waits on CLOCK_MONOTONIC.

    /// A set alarm, to cancel.
    struct Alarm: Sendable {
        fileprivate let id: UInt64
    }

    static let shared = TaskThread(name: "pgpush-tasks")

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [UnownedJob] = []
    private var alarms = AlarmQueue()
    private var nextAlarmID: UInt64 = 0
    /// The thread waits on the condition variable and nobody has signalled it since.
    private var asleep = false
    /// While asleep: when it wakes by itself (nil: only when signalled).
    private var wakesAt: ContinuousClock.Instant?

    private init(name: String) {
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        condition.initialize(to: pthread_cond_t())
        precondition(pthread_cond_init(condition, &attributes) == 0, "pthread_cond_init failed")
        pthread_condattr_destroy(&attributes)
        jobs.reserveCapacity(64)
        // Set from the thread itself: Foundation's `Thread.name` does not reach the kernel here.
        Thread.detachNewThread { [self] in
            _ = cshims_set_thread_name(name)
            run()
        }
    }

    /// Calls `action` on the thread once `delay` has passed, unless cancelled first.
    func set(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> Alarm {
        let due = ContinuousClock.now + max(delay, .zero)
        pthread_mutex_lock(mutex)
        nextAlarmID &+= 1
        let id = nextAlarmID
        alarms.insert(id: id, due: due, action: action)
        // Asleep towards a later time (or none): it must wake to sleep towards this one.
        let wake = asleep && (wakesAt.map { due < $0 } ?? true)
        if wake { asleep = false }
        pthread_mutex_unlock(mutex)
        if wake { pthread_cond_signal(condition) }
        return Alarm(id: id)
    }

    /// The action will not be called (unless it is being called).
    func cancel(_ alarm: Alarm) {
        withLock { alarms.cancel(alarm.id) }
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        append(UnownedJob(job))
    }

    fileprivate func append(_ job: UnownedJob) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        let wake = asleep
        asleep = false
        pthread_mutex_unlock(mutex)
        if wake { pthread_cond_signal(condition) }
    }

    /// A job the runtime wants run later (`Task.sleep`, a clock's deadline): an alarm that
    /// runs it.
    fileprivate func append(_ job: UnownedJob, after delay: Duration) {
        _ = set(after: delay) { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
    }

    private func withLock<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    private func run() {
        var batch: [UnownedJob] = []
        batch.reserveCapacity(64)
        pthread_mutex_lock(mutex)
        while true {
            if let due = alarms.firstDue, due <= .now, let action = alarms.removeFirst() {
                pthread_mutex_unlock(mutex)
                action()
                pthread_mutex_lock(mutex)
            } else if !jobs.isEmpty {
                swap(&batch, &jobs)
                pthread_mutex_unlock(mutex)
                for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
                batch.removeAll(keepingCapacity: true)
                pthread_mutex_lock(mutex)
            } else {
                asleep = true
                wakesAt = alarms.firstDue
                if let wakesAt {
                    var deadline = timespec()
                    clock_gettime(CLOCK_MONOTONIC, &deadline)
                    let (seconds, attoseconds) = ContinuousClock.now.duration(to: wakesAt).components
                    var nanoseconds = Int(deadline.tv_nsec) + Int(attoseconds / 1_000_000_000) + 1
                    deadline.tv_sec += Int(seconds) + nanoseconds / 1_000_000_000
                    nanoseconds %= 1_000_000_000
                    deadline.tv_nsec = nanoseconds
                    pthread_cond_timedwait(condition, mutex, &deadline)
                } else {
                    pthread_cond_wait(condition, mutex)
                }
                asleep = false
            }
        }
    }
}

/// The alarms set and not yet called, soonest first: a binary heap, as there may be
/// thousands (every `Task.sleep` of the process is one, a cancelled sleep's until it is
/// due). A cancelled alarm stays in the heap, marked, until it reaches the top.
private struct AlarmQueue {
    private struct Entry {
        let id: UInt64
        let due: ContinuousClock.Instant
        let action: @Sendable () -> Void
    }

    private var heap: [Entry] = []
    /// The alarms in the heap neither called nor cancelled.
    private var live: Set<UInt64> = []

    /// When the soonest alarm still set is due.
    var firstDue: ContinuousClock.Instant? {
        mutating get {
            dropCancelledFromTop()
            return heap.first?.due
        }
    }

    mutating func insert(id: UInt64, due: ContinuousClock.Instant, action: @escaping @Sendable () -> Void) {
        heap.append(Entry(id: id, due: due, action: action))
        live.insert(id)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func cancel(_ id: UInt64) { live.remove(id) }

    /// Takes the soonest alarm still set.
    mutating func removeFirst() -> (@Sendable () -> Void)? {
        dropCancelledFromTop()
        guard let top = popTop() else { return nil }
        live.remove(top.id)
        return top.action
    }

    private mutating func dropCancelledFromTop() {
        while let top = heap.first, !live.contains(top.id) { _ = popTop() }
    }

    private mutating func popTop() -> Entry? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var first = parent
            if left < heap.count && Self.before(heap[left], heap[first]) { first = left }
            if right < heap.count && Self.before(heap[right], heap[first]) { first = right }
            guard first != parent else { return top }
            heap.swapAt(parent, first)
            parent = first
        }
    }

    /// Due sooner, or set earlier when due at the same instant.
    private static func before(_ a: Entry, _ b: Entry) -> Bool { a.due < b.due || (a.due == b.due && a.id < b.id) }
}

// MARK: - The global executor

extension TaskThread {
    /// Makes the thread the process's global executor: every task without an executor of its
    /// own — `Task {}`, task groups' children, continuations resumed from other threads,
    /// `Task.sleep` — runs here from now on. For a process whose tasks are a worker's only
    /// (`pgpush run`); call it once, before the first task starts.
    ///
    /// Through the runtime's hooks for the global executor (the ones SwiftNIO and
    /// JavaScriptKit install), read with `dlsym` so that nothing here needs the runtime's C
    /// headers. Returns false, and changes nothing, if this runtime has no such hooks.
    @discardableResult
    package static func becomeGlobalExecutor() -> Bool {
        guard let enqueueHook = dlsym(nil, "swift_task_enqueueGlobal_hook"),
              let delayHook = dlsym(nil, "swift_task_enqueueGlobalWithDelay_hook"),
              let deadlineHook = dlsym(nil, "swift_task_enqueueGlobalWithDeadline_hook") else { return false }
        _ = shared
        let enqueue: EnqueueHook = { job, _ in TaskThread.shared.append(job) }
        let delay: DelayHook = { nanoseconds, job, _ in
            TaskThread.shared.append(job, after: .nanoseconds(Int64(clamping: nanoseconds)))
        }
        let deadline: DeadlineHook = { seconds, nanoseconds, _, _, clock, job, _ in
            var nowSeconds: Int64 = 0
            var nowNanoseconds: Int64 = 0
            swiftGetTime(&nowSeconds, &nowNanoseconds, clock)
            let delay = Duration.seconds(seconds - nowSeconds) + .nanoseconds(nanoseconds - nowNanoseconds)
            TaskThread.shared.append(job, after: delay)
        }
        delayHook.storeBytes(of: unsafeBitCast(delay, to: UnsafeRawPointer.self), as: UnsafeRawPointer.self)
        deadlineHook.storeBytes(of: unsafeBitCast(deadline, to: UnsafeRawPointer.self), as: UnsafeRawPointer.self)
        enqueueHook.storeBytes(of: unsafeBitCast(enqueue, to: UnsafeRawPointer.self), as: UnsafeRawPointer.self)
        return true
    }

    // The hooks' types: the runtime calls them with Swift's calling convention, the
    // runtime's own implementation last (never called: everything goes to the thread).
    private typealias EnqueueHook = @convention(thin) (UnownedJob, UnsafeRawPointer) -> Void
    private typealias DelayHook = @convention(thin) (UInt64, UnownedJob, UnsafeRawPointer) -> Void
    private typealias DeadlineHook = @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob, UnsafeRawPointer) -> Void
}

/// The runtime's clocks (`swift_clock_id`: 1 continuous, 2 suspending) as the deadline hook
/// gives them.
@_silgen_name("swift_get_time")
private func swiftGetTime(_ seconds: UnsafeMutablePointer<Int64>, _ nanoseconds: UnsafeMutablePointer<Int64>, _ clock: Int32)
