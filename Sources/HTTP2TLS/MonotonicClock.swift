import Glibc

/// Nanoseconds on CLOCK_MONOTONIC: one clock shared by the caller threads that stamp
/// deadlines and the I/O thread that enforces them, and cheaper than `ContinuousClock`.
enum MonotonicClock {
    static func now() -> UInt64 { read(CLOCK_MONOTONIC) }

    /// CLOCK_REALTIME, the clock of the kernel's receive timestamps: read next to `now()`
    /// to place such a timestamp on the monotonic clock.
    static func realtimeNow() -> UInt64 { read(CLOCK_REALTIME) }

    private static func read(_ clock: clockid_t) -> UInt64 {
        var time = timespec()
        clock_gettime(clock, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        // Any negative duration is 0, also one under a second (whole seconds 0, attoseconds negative).
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
    }
}
