import Locking

/// One rule for warnings that repeat while something stays broken (the database is
/// down: every claim, heartbeat, lease renewal and outcome write fails): the first
/// occurrence is logged as it is, later ones at most once per `interval` with how many
/// there were, and recovery logs the count not yet reported. Without it an outage
/// writes dozens of identical lines a second and buries everything else.
package final class RepeatedWarnings: Sendable {
    private struct Streak {
        var lastLogged: ContinuousClock.Instant
        var unreported = 0
    }

    private let log: Log
    private let interval: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    private let streaks = Locked<[String: Streak]>([:])

    package init(log: Log, interval: Duration = .seconds(30),
                now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.log = log
        self.interval = interval
        self.now = now
    }

    /// Logs `event` unless it was logged less than `interval` ago for the same `key`
    /// (an app name, say); a line after a quiet spell carries `repeated` (occurrences
    /// since the previous line, this one included) and `in_last`.
    package func warning(_ event: String, key: String = "", _ fields: KeyValuePairs<String, Any>) {
        warning(event, key: key, Array(fields))
    }

    /// For fields built at run time.
    func warning(_ event: String, key: String = "", _ fields: [(key: String, value: Any)]) {
        let instant = now()
        let summary = streaks.withLock { streaks -> (count: Int, over: Duration)?? in
            guard var streak = streaks[event + "\u{0}" + key] else {
                streaks[event + "\u{0}" + key] = Streak(lastLogged: instant)
                return .some(nil)
            }
            streak.unreported += 1
            defer { streaks[event + "\u{0}" + key] = streak }
            let elapsed = streak.lastLogged.duration(to: instant)
            guard elapsed >= interval else { return nil }
            let count = streak.unreported
            streak.unreported = 0
            streak.lastLogged = instant
            return .some((count, elapsed))
        }
        switch summary {
        case .none: return
        case .some(.none): log.warning(event, fields)
        case .some(.some(let repeated)):
            log.warning(event, fields + [("repeated", repeated.count), ("in_last", Self.seconds(repeated.over))])
        }
    }

    /// The failing operation succeeded: reports repeats not yet logged, and the next
    /// failure is news again.
    package func recovered(_ event: String, key: String = "") {
        let instant = now()
        guard let streak = streaks.withLock({ $0.removeValue(forKey: event + "\u{0}" + key) }), streak.unreported > 0 else { return }
        let fields: [(key: String, value: Any)] = [("repeated", streak.unreported),
                                                   ("in_last", Self.seconds(streak.lastLogged.duration(to: instant))),
                                                   ("state", "recovered")]
        log.warning(event, (key.isEmpty ? [] : [("key", key)]) + fields)
    }

    private static func seconds(_ duration: Duration) -> String {
        "\(duration.components.seconds) s"
    }
}
