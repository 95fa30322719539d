/// An instant of `ContinuousClock`, kept as the time since one origin taken per process: the
/// pool's and the connection rates' clock.
///
/// Why not `ContinuousClock.Instant` itself: the standard library keeps that type's layout
/// its own to change (it is not frozen), so every struct holding one — a pool slot, its rate
/// window, its 429 throttle — has a layout known only at run time, and each look at a slot
/// in a lease copied and destroyed the whole slot through runtime metadata and witness
/// tables (at 1,000/s over 20 connections, about half of the lease's time; BENCHMARKS.md,
/// "a peer for the worker's own CPU"). `Duration` is frozen, so this type and everything
/// holding it have a layout the compiler knows.
package struct PoolInstant: InstantProtocol, Hashable, Sendable {
    private static let origin = ContinuousClock.now

    /// Time since `origin` (negative for instants before it).
    private var sinceOrigin: Duration

    private init(sinceOrigin: Duration) {
        self.sinceOrigin = sinceOrigin
    }

    package init(_ instant: ContinuousClock.Instant) {
        sinceOrigin = Self.origin.duration(to: instant)
    }

    package static var now: PoolInstant { PoolInstant(.now) }

    /// The same instant as the standard library's type, to sleep until.
    package var continuous: ContinuousClock.Instant { Self.origin.advanced(by: sinceOrigin) }

    package func advanced(by duration: Duration) -> PoolInstant {
        PoolInstant(sinceOrigin: sinceOrigin + duration)
    }

    package func duration(to other: PoolInstant) -> Duration {
        other.sinceOrigin - sinceOrigin
    }

    package static func + (instant: PoolInstant, duration: Duration) -> PoolInstant { instant.advanced(by: duration) }

    package static func - (instant: PoolInstant, duration: Duration) -> PoolInstant { instant.advanced(by: .zero - duration) }

    package static func < (left: PoolInstant, right: PoolInstant) -> Bool {
        left.sinceOrigin < right.sinceOrigin
    }
}
