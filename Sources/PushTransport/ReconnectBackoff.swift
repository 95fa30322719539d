/// Delay before reconnecting after failed connection attempts: `initial` doubling up to
/// `maximum`, each delay drawn uniformly from its upper half ("equal jitter"), so that
/// many workers restarted together do not reconnect in lockstep, and no delay is near zero
/// (Apple treats rapid connect/disconnect as a possible attack).
package struct ReconnectBackoff: Sendable, Equatable {
    package var initial: Duration
    package var maximum: Duration

    /// 1 s doubling to 60 s, as Pushy does.
    package static let standard = ReconnectBackoff(initial: .seconds(1), maximum: .seconds(60))

    package init(initial: Duration, maximum: Duration) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The un-jittered delay after `failures` consecutive failures (0 means none: no delay).
    package func ceiling(afterFailures failures: Int) -> Duration {
        guard failures > 0 else { return .zero }
        var delay = initial
        for _ in 1..<min(failures, 63) {
            delay *= 2
            if delay >= maximum { return maximum }
        }
        return min(delay, maximum)
    }

    /// A jittered delay in [ceiling/2, ceiling].
    package func delay(afterFailures failures: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        ceiling(afterFailures: failures) * Double.random(in: 0.5...1.0, using: &generator)
    }

    package func delay(afterFailures failures: Int) -> Duration {
        // Not `delay(using: &SystemRandomNumberGenerator())`: a zero-sized generator passed
        // inout from several threads looks to ThreadSanitizer like one shared variable.
        ceiling(afterFailures: failures) * Double.random(in: 0.5...1.0)
    }
}
