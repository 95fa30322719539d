#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value that threads share, guarded by a pthread mutex.
///
/// pgpush uses this instead of `Synchronization.Mutex` so that ThreadSanitizer can
/// check it: on Linux, `Mutex` hands a contended lock to the waiter inside the kernel
/// (a priority-inheritance futex), which TSan does not see, so every contended
/// critical section looked like a data race and real races would hide among them.
/// TSan intercepts `pthread_mutex_lock`, so with this lock its reports mean something.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked: the value is only touched between pthread_mutex_lock and _unlock, and
    // values go in and out as `sending`, as with `Mutex`. Both live behind pointers so
    // that `withLock` (inlined into callers, like `Mutex.withLock`) pays for no dynamic
    // exclusivity check on a class property.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let value: UnsafeMutablePointer<Value>

    package init(_ initialValue: sending Value) {
        value = UnsafeMutablePointer<Value>.allocate(capacity: 1)
        value.initialize(to: initialValue)
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed: \(result)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with the value while holding the lock. Keep `body` short and never
    /// suspend or block in it: the event loops take these locks too.
    @inlinable
    package func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
