import COpenSSL

/// OpenSSL frees its global state from an `atexit` handler unless told not to, and any
/// thread still inside OpenSSL while `exit` runs then takes a lock that is gone: a key
/// freed by the last release of a worker on a task thread, a signature, an I/O thread.
/// `pgpush run` ended with SIGSEGV that way once in about fifty benchmark drains
/// (2026-12-05, in `pthread_rwlock_wrlock`), after its I/O threads were already joined.
/// The process leaves that memory to the kernel instead, as it does every other.
package enum OpenSSLExit {
    /// Turns the `atexit` cleanup off. Only the first initialization of OpenSSL decides,
    /// so call this before anything else in the process uses it; false if OpenSSL refused.
    @discardableResult
    package static func leaveCleanupToTheKernel() -> Bool {
        OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1
    }
}
