import Locking
import PGPushCore

/// Whether the worker may send for an app, and for each of its topics.
///
/// Credential, certificate and environment errors pause the whole app (the claim loop
/// stops claiming); a topic error pauses that topic only, while the app's other topics
/// keep their full rate. Rows of a paused topic go back to the queue unsent. After a
/// pause one request is sent as a probe, and its success resumes the scope; another
/// refusal doubles the pause, from 5 s up to 5 minutes.
final class AppHealth: Sendable {
    enum Phase: Equatable {
        case healthy
        case paused(until: ContinuousClock.Instant)
        case probing
    }

    /// One pausable scope: the app, or one of its topics.
    private struct Gate {
        var phase = Phase.healthy
        var backoff: Duration = .zero
        var probeInFlight = false

        mutating func currentPhase(at now: ContinuousClock.Instant) -> Phase {
            if case .paused(let until) = phase, now >= until { phase = .probing }
            return phase
        }

        /// Returns the pause when this report paused the scope (nil if it already was).
        mutating func pause(at now: ContinuousClock.Instant) -> Duration? {
            if case .paused = currentPhase(at: now) { return nil }
            backoff = backoff == .zero ? AppHealth.firstPause : min(backoff * 2, AppHealth.longestPause)
            phase = .paused(until: now + backoff)
            probeInFlight = false
            return backoff
        }
    }

    private struct State {
        var app = Gate()
        var topics: [String: Gate] = [:]
        var reportedHealthy = false
        var mismatch = EnvironmentMismatchMonitor()
    }

    static let firstPause: Duration = .seconds(5)
    static let longestPause: Duration = .seconds(300)

    private let state = Locked(State())

    /// The whole app's phase, which the claim loop follows.
    var phase: Phase {
        state.withLock { $0.app.currentPhase(at: .now) }
    }

    /// Whether a row for `topic` may be sent now: nil to send it, else how long to park it.
    /// While a topic is paused its rows wait out the pause; once it ends, one row probes
    /// and the others wait a whole pause more, so each row is claimed about once a pause.
    func admit(topic: String) -> Duration? {
        state.withLock { state in
            guard var gate = state.topics[topic] else { return nil }
            defer { state.topics[topic] = gate }
            let now = ContinuousClock.now
            switch gate.currentPhase(at: now) {
            case .healthy:
                return nil
            case .paused(let until):
                return max(now.duration(to: until), .seconds(1))
            case .probing:
                if gate.probeInFlight { return max(gate.backoff, Self.firstPause) }
                gate.probeInFlight = true
                return nil
            }
        }
    }

    /// Pauses the app, or one topic of it. Returns the pause when this report paused it.
    func reportProblem(topic: String? = nil) -> Duration? {
        state.withLock { state in
            let now = ContinuousClock.now
            guard let topic else {
                state.reportedHealthy = false
                return state.app.pause(at: now)
            }
            return state.topics[topic, default: Gate()].pause(at: now)
        }
    }

    /// A row of `topic` was answered without a topic refusal. `accepted`: APNs answered
    /// (so the topic passed), which ends its pause; without an answer nothing was learned
    /// and the next row may probe. Returns true when this ended a pause of that topic.
    func topicAnswered(_ topic: String, accepted: Bool) -> Bool {
        state.withLock { state in
            guard state.topics[topic] != nil else { return false }
            guard accepted else {
                state.topics[topic]?.probeInFlight = false
                return false
            }
            state.topics[topic] = nil
            return true
        }
    }

    /// Returns true when this success should be written as "healthy" (first one, or after a problem).
    /// While a wrong environment is suspected the app stays reported unhealthy.
    func reportSuccess() -> Bool {
        state.withLock { state in
            state.app = Gate()
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
