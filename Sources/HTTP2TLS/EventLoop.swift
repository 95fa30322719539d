import CShims
import Glibc
import Locking
import Synchronization

/// The thread-confined half of an event loop: owns connections, runs commands posted from
/// other threads, and says which descriptors to poll and when its next timer is due.
protocol EventLoopDriver<Command>: AnyObject {
    associatedtype Command: Sendable
    func execute(_ command: Command)
    /// Appends descriptors to poll; returns the earliest timer (MonotonicClock ns) if any.
    func registerInterest(_ descriptors: inout [pollfd]) -> UInt64?
    /// `descriptors` is the array filled by `registerInterest` after poll(); entries from
    /// `firstIndex` on belong to this driver, in the order it appended them.
    func handleEvents(_ descriptors: [pollfd], firstIndex: Int)
    func handleTimers(now: UInt64)
    /// Runs after commands are executed, before polling (write out what they produced).
    func flush()
    /// The loop is stopping: resolve everything and release every resource.
    func shutDown()
}

/// One I/O thread running a poll() loop for a driver, plus the Sendable inbox other threads
/// post commands to. The eventfd is written only when the inbox goes from empty to
/// non-empty, so a burst of posts costs one wake-up.
final class EventLoop<Command: Sendable>: Sendable {
    private struct Inbox {
        var commands: [Command] = []
        var stopRequested = false
        var isClosed = false
    }

    private let inbox = Locked(Inbox())
    private let wakeDescriptor: Int32
    private let thread = IOThreads.Handle()
    private let registration = Locked(0)
    private let counter: LiveObjectCounter
    private let loopThread = Atomic<pthread_t>(0)

    init(name: String, counter: LiveObjectCounter, makeDriver: @escaping @Sendable (EventLoop<Command>) -> any EventLoopDriver<Command>) throws(LoopStartError) {
        // A write to a socket the peer reset must be an error, not a process-killing signal.
        signal(SIGPIPE, SIG_IGN)
        let descriptor = cshims_eventfd(0, 1)
        guard descriptor >= 0 else { throw LoopStartError(detail: "eventfd: \(Socket.errorText())") }
        wakeDescriptor = descriptor
        self.counter = counter
        let body: @Sendable () -> Void = { [self] in
            _ = cshims_set_thread_name(name)
            run(driver: makeDriver(self))
        }
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        counter.ioThreads.add(1, ordering: .relaxed)
        var handle = pthread_t()
        let status = pthread_create(&handle, nil, { argument in
            guard let argument else { return nil }
            let body = Unmanaged<ThreadBody>.fromOpaque(argument).takeRetainedValue()
            body.run()
            return nil
        }, box)
        guard status == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            counter.ioThreads.subtract(1, ordering: .relaxed)
            close(descriptor)
            throw LoopStartError(detail: "pthread_create: \(Socket.errorText(status))")
        }
        thread.set(handle)
        registration.withLock { $0 = IOThreads.register(thread) { [weak self] in self?.requestStop() } }
    }

    deinit { close(wakeDescriptor) }

    /// Queues a command; false if the loop has stopped (the caller must resolve it itself).
    @discardableResult
    func post(_ command: Command) -> Bool {
        let shouldWake: Bool? = inbox.withLock { inbox in
            guard !inbox.isClosed, !inbox.stopRequested else { return nil }
            inbox.commands.append(command)
            return inbox.commands.count == 1
        }
        guard let shouldWake else { return false }
        // The loop thread itself looks at the inbox again before it sleeps.
        if shouldWake && pthread_equal(pthread_self(), loopThread.load(ordering: .relaxed)) == 0 { wake() }
        return true
    }

    /// Stops the loop; waits for the thread to finish unless called on the loop thread,
    /// which leaves the join to `IOThreads.stopAndJoinAll` rather than detaching: a
    /// detached thread could still be in OpenSSL when the process exits.
    func stop() {
        requestStop()
        guard let handle = thread.takeForJoin() else { return }
        pthread_join(handle, nil)
        IOThreads.joined(registration.withLock { $0 })
    }

    private func requestStop() {
        let wasRunning = inbox.withLock { inbox -> Bool in
            defer { inbox.stopRequested = true }
            return !inbox.stopRequested
        }
        if wasRunning { wake() }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, 8)
    }

    private func run(driver: any EventLoopDriver<Command>) {
        loopThread.store(pthread_self(), ordering: .relaxed)
        var batch: [Command] = []
        var descriptors: [pollfd] = []
        while true {
            let stopping = inbox.withLock { inbox -> Bool in
                swap(&inbox.commands, &batch)
                if inbox.stopRequested { inbox.isClosed = true }
                return inbox.stopRequested
            }
            for command in batch { driver.execute(command) }
            batch.removeAll(keepingCapacity: true)
            if stopping { break }
            driver.flush()

            descriptors.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0))
            let timer = driver.registerInterest(&descriptors)
            var timeout: Int32 = -1
            if inbox.withLock({ !$0.commands.isEmpty }) {
                timeout = 0
            } else if let timer {
                let now = MonotonicClock.now()
                timeout = timer <= now ? 0 : Int32(min((timer - now + 999_999) / 1_000_000, 60_000))
            }
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if ready < 0 && errno != EINTR { break }
            if descriptors[0].revents != 0 {
                var value: UInt64 = 0
                _ = read(wakeDescriptor, &value, 8)
            }
            if ready > 0 { driver.handleEvents(descriptors, firstIndex: 1) }
            driver.handleTimers(now: MonotonicClock.now())
        }
        inbox.withLock { $0.isClosed = true }
        // Commands posted between the last swap and closing still need resolving.
        let leftovers = inbox.withLock { inbox -> [Command] in
            defer { inbox.commands.removeAll() }
            return inbox.commands
        }
        for command in leftovers { driver.execute(command) }
        driver.shutDown()
        counter.ioThreads.subtract(1, ordering: .relaxed)
    }
}

/// Carries the thread body through pthread_create's `void *`.
private final class ThreadBody {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// The I/O thread (or its eventfd) could not be created.
package struct LoopStartError: Error, Sendable, CustomStringConvertible {
    package var detail: String
    package var description: String { "cannot start I/O thread: \(detail)" }
}
