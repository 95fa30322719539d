/// Small background duties on their own periods (heartbeat, lease renewal,
/// rescue, pruning), run one after another by one task, River-style: each is
/// a plain function, and this type only decides when each is due.
struct PeriodicDuties {
    struct Duty {
        let name: String
        let every: Duration
        /// Whether the duty still runs while the worker drains (lease renewal must).
        let whileDraining: Bool
        let run: () async -> Void
        var lastRun: ContinuousClock.Instant?
    }

    private var duties: [Duty] = []

    mutating func add(_ name: String, every: Duration, whileDraining: Bool = false, firstRunNow: Bool = true,
                      _ run: @escaping () async -> Void) {
        duties.append(Duty(name: name, every: every, whileDraining: whileDraining, run: run,
                           lastRun: firstRunNow ? nil : ContinuousClock.now))
    }

    /// Runs every duty that is due; returns how long until the next one is.
    mutating func runDue(draining: Bool) async -> Duration {
        var wait = Duration.seconds(3600)
        for index in duties.indices {
            guard !draining || duties[index].whileDraining else { continue }
            let now = ContinuousClock.now
            if duties[index].lastRun.map({ now - $0 >= duties[index].every }) ?? true {
                duties[index].lastRun = now
                await duties[index].run()
            }
            if let last = duties[index].lastRun {
                wait = min(wait, last + duties[index].every - ContinuousClock.now)
            }
        }
        return max(wait, .milliseconds(10))
    }
}
