import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A worker's own thread: it runs the worker's tasks (their task executor: the claim
/// loops, the sends, the outcome writer, inherited by child tasks) and calls the alarms that
/// end their waits (`Doorbell`, `Latch`).
///
/// Thread wake-ups are most of the worker's CPU at the rates applications run (a few tens
/// of microseconds each on this VM). On the default pool each step of a send — its start, its
/// resumption by the I/O thread's answer, the claim's return from the database thread —
/// could land on another of its threads, which the pool woke for nearly every job, and a
/// timeout's alarm woke a thread of its own that then woke the pool: at 100 notifications/s
/// about fourteen sleeps and wake-ups per notification (BENCHMARKS.md, 0.5.0). Here a job
/// or an alarm set by the thread itself wakes nobody, one wake-up runs every job that arrived
/// meanwhile, and the thread sleeps until its next alarm, which is how the claim loop's
/// waits end while rows come steadily. (A timeout as a task sleeping beside the wait,
/// `Task.sleep`, cost more still: the timer task had to start, be cancelled and finish.)
///
/// One per worker, so that workers in one process (tests, a reload's next worker) never
/// wait for each other; waits outside any worker set their alarms on `shared`. Jobs and
/// alarms run one after the other and must not block (as on the default pool): libpq's
/// calls run on the database executors' queues, sockets on the I/O threads. An alarm's
/// action only resumes a continuation.
final class TaskThread: TaskExecutor, @unchecked Sendable {
    // @unchecked: the vars are touched only between pthread_mutex_lock and _unlock; the
    // condition variable waits on CLOCK_MONOTONIC.

    /// A set alarm, to cancel.
    struct Alarm: Sendable {
        fileprivate let id: UInt64
        fileprivate let thread: TaskThread

        /// The action will not be called (unless it is being called). Wakes nobody: the
        /// thread, waking for a cancelled alarm, finds nothing due and sleeps again.
        func cancel() { thread.removeAlarm(id) }
    }

    private struct Pending {
        let id: UInt64
        let due: ContinuousClock.Instant
        let action: @Sendable () -> Void
    }

    /// Alarms of waits outside any worker.
    static let shared = TaskThread(name: "pgpush-alarms")

    /// The worker's thread, for the tasks of its run (`Worker.run`).
    @TaskLocal static var current: TaskThread?

    /// Where a wait sets its alarm: on the thread it runs on, when that is a worker's.
    static var forAlarms: TaskThread { current ?? shared }

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [UnownedJob] = []
    /// Due soonest first.
    private var alarms: [Pending] = []
    private var nextAlarmID: UInt64 = 0
    /// The thread waits on the condition variable and nobody has signalled it since.
    private var asleep = false
    /// While asleep: when it wakes by itself (nil: only when signalled).
    private var wakesAt: ContinuousClock.Instant?
    private var thread: pthread_t?
    private var ended = false

    init(name: String) {
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        condition.initialize(to: pthread_cond_t())
        precondition(pthread_cond_init(condition, &attributes) == 0, "pthread_cond_init failed")
        pthread_condattr_destroy(&attributes)
        jobs.reserveCapacity(64)
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// True on the thread itself.
    var isCurrent: Bool {
        withLock { thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pthread_mutex_lock(mutex)
        if ended {
            pthread_mutex_unlock(mutex)
            // Resumed after the worker's run ended (a continuation a transport resumed late).
            globalConcurrentExecutor.enqueue(job)
            return
        }
        jobs.append(job)
        let wake = asleep
        asleep = false
        pthread_mutex_unlock(mutex)
        if wake { pthread_cond_signal(condition) }
    }

    /// Calls `action` on the thread once `delay` has passed, unless cancelled first.
    func setAlarm(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> Alarm {
        let due = ContinuousClock.now + max(delay, .zero)
        pthread_mutex_lock(mutex)
        if ended {
            pthread_mutex_unlock(mutex)
            return Self.shared.setAlarm(after: delay, action)
        }
        nextAlarmID &+= 1
        let id = nextAlarmID
        alarms.insert(Pending(id: id, due: due, action: action), at: alarms.firstIndex { $0.due > due } ?? alarms.endIndex)
        // Asleep towards a later time (or none): it must wake to sleep towards this one.
        let wake = asleep && (wakesAt.map { due < $0 } ?? true)
        if wake { asleep = false }
        pthread_mutex_unlock(mutex)
        if wake { pthread_cond_signal(condition) }
        return Alarm(id: id, thread: self)
    }

    /// The worker's run has ended: the thread runs the jobs queued and ends. Jobs that come
    /// later run on the default pool; alarms still set, and those set later, on `shared`.
    func end() {
        pthread_mutex_lock(mutex)
        ended = true
        asleep = false
        pthread_mutex_unlock(mutex)
        pthread_cond_signal(condition)
    }

    private func removeAlarm(_ id: UInt64) {
        withLock {
            if let index = alarms.firstIndex(where: { $0.id == id }) { alarms.remove(at: index) }
        }
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
        thread = pthread_self()
        while true {
            if let first = alarms.first, first.due <= .now {
                alarms.removeFirst()
                pthread_mutex_unlock(mutex)
                first.action()
                pthread_mutex_lock(mutex)
            } else if !jobs.isEmpty {
                swap(&batch, &jobs)
                pthread_mutex_unlock(mutex)
                for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
                batch.removeAll(keepingCapacity: true)
                pthread_mutex_lock(mutex)
            } else if ended {
                break
            } else {
                asleep = true
                wakesAt = alarms.first?.due
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
        let left = alarms
        alarms.removeAll()
        pthread_mutex_unlock(mutex)
        // A wait still going after the run ended (none should) still ends at its time. Its
        // `Alarm` names this thread, so cancelling it no longer reaches it: the action fires
        // and finds its wait over, as an action that races a cancel does.
        for alarm in left {
            _ = Self.shared.setAlarm(after: ContinuousClock.now.duration(to: alarm.due), alarm.action)
        }
    }
}
