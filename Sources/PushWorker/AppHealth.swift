import Locking
import PGPushCore

/// Whether the worker may claim for an app. Credential, certificate and topic
/// errors pause the app (its rows stay queued); after the pause one row is
/// sent as a probe, and its success resumes the app (SPEC §4).
final class AppHealth: Sendable {
    enum Phase: Equatable {
        case healthy
        case paused(until: ContinuousClock.Instant)
        case probing
    }

    private struct State {
        var phase = Phase.healthy
        var backoff: Duration = .zero
        var reportedHealthy = false
        var mismatch = EnvironmentMismatchMonitor()
    }

    static let firstPause: Duration = .seconds(5)
    static let longestPause: Duration = .seconds(300)

    private let state = Locked(State())

    var phase: Phase {
        state.withLock { state in
            if case .paused(let until) = state.phase, ContinuousClock.now >= until { state.phase = .probing }
            return state.phase
        }
    }

    /// Returns the pause when this report paused the app (nil if it already was).
    func reportProblem() -> Duration? {
        state.withLock { state in
            if case .paused = state.phase { return nil }
            state.backoff = state.backoff == .zero ? Self.firstPause : min(state.backoff * 2, Self.longestPause)
            state.phase = .paused(until: .now + state.backoff)
            state.reportedHealthy = false
            return state.backoff
        }
    }

    /// Returns true when this success should be written as "healthy" (first one, or after a problem).
    /// While a wrong environment is suspected the app stays reported unhealthy.
    func reportSuccess() -> Bool {
        state.withLock { state in
            state.phase = .healthy
            state.backoff = .zero
            guard !state.mismatch.isSuspected else { return false }
            defer { state.reportedHealthy = true }
            return !state.reportedHealthy
        }
    }

    /// Feeds every APNs answer (nil reason for a success) to the environment-mismatch monitor.
    func recordAnswer(reason: String?) -> EnvironmentMismatchMonitor.Verdict {
        state.withLock { state in
            let verdict = state.mismatch.record(reason: reason)
            if verdict == .suspected { state.reportedHealthy = false }
            return verdict
        }
    }
}
