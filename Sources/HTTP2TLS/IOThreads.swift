import Glibc
import Locking

/// Every I/O thread of the process (HTTP/2 clients, the simulator's servers), so that
/// the process can stop and join them all before it exits.
///
/// They use OpenSSL: unless `OpenSSLExit` turned it off first, `exit` runs OpenSSL's atexit
/// cleanup, which frees what a thread still in OpenSSL (a read, a write, its thread-exit
/// cleanup) is using: a worker once died with SIGSEGV after `worker_stopped`. Joined, they
/// also end their connections themselves. A loop stopped from its own thread (the last
/// reference to a client dropped there) cannot join itself, and detaching it would leave
/// it running unseen; it stays here until `stopAndJoinAll` joins it.
package enum IOThreads {
    /// A thread's handle, joined exactly once by whoever takes it first.
    final class Handle: Sendable {
        private let handle = Locked<pthread_t?>(nil)

        func set(_ value: pthread_t) { handle.withLock { $0 = value } }

        /// The handle, once, unless the caller is that thread (it cannot join itself).
        func takeForJoin() -> pthread_t? {
            handle.withLock { handle in
                guard let current = handle, pthread_equal(current, pthread_self()) == 0 else { return nil }
                handle = nil
                return current
            }
        }
    }

    private struct Entry {
        let handle: Handle
        let requestStop: @Sendable () -> Void
    }

    /// Keyed by a number never reused: an unjoined thread's entry must outlive its loop.
    private static let entries = Locked<(next: Int, all: [Int: Entry])>((0, [:]))

    /// Returns the key for `joined`.
    static func register(_ handle: Handle, requestStop: @escaping @Sendable () -> Void) -> Int {
        entries.withLock { entries in
            entries.next += 1
            entries.all[entries.next] = Entry(handle: handle, requestStop: requestStop)
            return entries.next
        }
    }

    /// The owner stopped and joined its thread.
    static func joined(_ key: Int) {
        _ = entries.withLock { $0.all.removeValue(forKey: key) }
    }

    /// Asks every I/O thread still registered to stop, then waits for each to end. Call
    /// last, before the process exits.
    package static func stopAndJoinAll() {
        let all = entries.withLock { entries -> [Entry] in
            defer { entries.all.removeAll() }
            return Array(entries.all.values)
        }
        for entry in all { entry.requestStop() }
        for entry in all {
            if let thread = entry.handle.takeForJoin() { pthread_join(thread, nil) }
        }
    }
}
