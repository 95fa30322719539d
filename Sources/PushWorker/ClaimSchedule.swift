import Locking
import Synchronization

/// When one app's claim loop claims next. Pure: the loop and the events that concern it feed
/// it, and it answers with the next step, so the rule reads (and is tested) in one place.
///
/// A claim costs a database round trip and a few thread wake-ups, as much worker CPU as
/// sending the rows it brings when they come one at a time (BENCHMARKS.md, worker CPU at
/// steady rates). So the loop claims only when rows may be waiting — a NOTIFY, the listener
/// reconnecting, rescued leases, a pause ending, a claim that came back full, a retry of this
/// worker's coming due, the poll interval since the last claim — and never sooner than `gap`
/// after the previous claim, so that rows inserted in a burst share one claim. A finished
/// send makes no claim by itself: it matters only when the loop waits for room.
///
/// While rows keep coming (`pollingRate` or more a second, as its claims find them), the loop
/// polls instead (`pollingInterval`): a claim per `rowsPerPolledClaim` rows it expects, at
/// most every gap and at least every `1 / pollingRate`, and no NOTIFY. A NOTIFY costs
/// PostgreSQL a transaction in the listening session and the inserting session a signal, for
/// each row (BENCHMARKS.md, 0.5.0). A row waits at most one interval: 20 ms up to 100 rows/s,
/// 10 ms at 200/s, 5 ms from 400/s. When the rows' rate falls below half `pollingRate`, the
/// loop listens again.
package struct ClaimSchedule {
    enum Step: Equatable {
        case claim
        /// Nothing to claim before `until`. `wakeEarly`: a NOTIFY (any ring) may bring the
        /// claim forward; false while rows are known to wait and only the gap holds the claim.
        case wait(until: ContinuousClock.Instant, wakeEarly: Bool)
    }

    /// The least time between two claims of one app: at 1,000 rows/s a claim takes about
    /// five rows instead of one; a row inserted after a quiet spell is claimed at once.
    package static let standardGap: Duration = .milliseconds(5)

    /// Rows per second of one app from which its loop polls instead of waiting for NOTIFYs.
    static let pollingRate = 50.0

    /// Rows a polled claim is meant to find, within the interval's bounds. A claim's cost is
    /// mostly its own, not its rows': at 100/s, two rows a claim instead of one took about a
    /// third off the database's CPU per notification and a quarter off the worker's, for a
    /// claim every 20 ms instead of 10 (BENCHMARKS.md, 2026-12-06, two rows a claim).
    static let rowsPerPolledClaim = 2.0

    /// How much each claim moves the rows' rate (an exponential moving average): four claims
    /// at a steady rate bring it from nothing to over half of it.
    static let rateSmoothing = 0.2

    /// How long before its previous claim a claim looks back for rows that became visible
    /// since: a transaction's rows carry the `send_after` of its start (`now()`), and commit
    /// a little later.
    static let lateCommitAllowance: Duration = .seconds(1)

    let gap: Duration
    let pollInterval: Duration
    /// Rows come at `pollingRate` or more: the loop claims at their pace without waiting for
    /// news, and needs no NOTIFY (the worker stops listening while every app polls).
    private(set) var polling = false
    /// Rows per second the claims found, smoothed over the last few claims.
    private(set) var rowRate = 0.0
    /// Time from the claim before the current one to the current one's start.
    private var sinceClaimBefore: Duration?
    /// The most rows the next claim asks for: fewer for a while after the database
    /// cancelled a claim for time.
    private(set) var claimSize: AdaptiveBatchSize
    private var lastClaim: ContinuousClock.Instant?
    /// The last claim that read every due row (`lookBack` nil).
    private var lastFullClaim: ContinuousClock.Instant?
    /// Rows older than the previous claim may be due: left by a full claim or a failed one,
    /// put back by a lease rescue, or unknown (a listener reconnect after an outage).
    private var olderRowsMayWait = true
    private var rowsMayWait = true
    /// When rows this worker put back come due (claims take them in any order, so all kept).
    private var retriesDue: [ContinuousClock.Instant] = []

    init(gap: Duration = standardGap, pollInterval: Duration, largestClaim: Int) {
        self.gap = gap
        self.pollInterval = pollInterval
        claimSize = AdaptiveBatchSize(largest: largestClaim)
    }

    /// Rows may be waiting: a NOTIFY for the app, a listener reconnect, rescued leases, the
    /// end of a pause.
    mutating func rowsMayBeWaiting() {
        rowsMayWait = true
    }

    /// Rows may be waiting whose `send_after` is older than the previous claim: leases
    /// rescued, the listener back after an outage. The next claim reads every due row.
    mutating func rowsMayBeWaitingAnywhere() {
        rowsMayWait = true
        olderRowsMayWait = true
    }

    /// This worker put a row back with `send_after` at about `instant`.
    mutating func retryComesDue(at instant: ContinuousClock.Instant) {
        retriesDue.append(instant)
    }

    /// A claim starts now: whatever arrives from here on is news for the next one. (A row
    /// committed before now is in this claim's snapshot; its NOTIFY may still come, and
    /// costs at most one more claim.)
    ///
    /// Returns how far back in `send_after` this claim looks (nil: every due row). Every row a
    /// claim takes leaves a dead entry at the head of the due rows' index until vacuum, and a
    /// claim reading from the head steps over all of them (3-7 ms a claim with 100,000,
    /// BENCHMARKS.md 0.5.0). A claim after news needs only the rows that became visible since
    /// the previous one: those with `send_after` from a little before it, or later (a row
    /// scheduled for later comes due after it; a retry of ours is put back for later). Every
    /// due row is read at least once per poll interval, and whenever older rows may wait.
    @discardableResult
    mutating func claimStarted(at now: ContinuousClock.Instant) -> Duration? {
        var lookBack: Duration?
        if let last = lastClaim, let full = lastFullClaim, !olderRowsMayWait, full.duration(to: now) < pollInterval {
            lookBack = last.duration(to: now) + Self.lateCommitAllowance
        } else {
            lastFullClaim = now
            olderRowsMayWait = false
        }
        sinceClaimBefore = lastClaim.map { $0.duration(to: now) }
        lastClaim = now
        rowsMayWait = false
        retriesDue.removeAll { $0 <= now }
        return lookBack
    }

    /// The claim took `taken` rows (expired and known-invalid ones included) of `asked`:
    /// a full claim may have left rows behind.
    mutating func claimEnded(taken: Int, asked: Int) {
        if let elapsed = sinceClaimBefore, elapsed > .zero {
            // Any rate above a row per gap means a claim every gap; capped at twice that, so
            // that after a backlog the loop listens again after about a dozen empty claims.
            let sample = min(Double(taken) / (elapsed / .seconds(1)), 2 * (.seconds(1) / gap))
            rowRate += Self.rateSmoothing * (sample - rowRate)
        }
        if rowRate >= Self.pollingRate { polling = true }
        if rowRate < Self.pollingRate / 2 { polling = false }
        if taken >= asked { rowsMayWait = true }
        // A full claim left rows behind, older ones too.
        if taken >= asked { olderRowsMayWait = true }
        claimSize.succeeded()
    }

    /// The claim failed: whatever it was for is still waiting. `timedOut`: the database
    /// cancelled it for time, and the next one asks for half as many rows.
    mutating func claimFailed(timedOut: Bool = false) {
        rowsMayWait = true
        olderRowsMayWait = true
        // Listen again: whatever comes after the outage should wake the loop.
        polling = false
        rowRate = 0
        if timedOut { claimSize.timedOut() }
    }

    /// While polling: the time between claims.
    var pollingInterval: Duration { Self.pollingInterval(rowRate: rowRate, gap: gap) }

    /// The time between polled claims for rows at `rowRate` a second: long enough for
    /// `rowsPerPolledClaim` of them, within `gap` and `1 / pollingRate`. (The bench's floor
    /// claims as often, so that both wait as long.)
    package static func pollingInterval(rowRate: Double, gap: Duration = standardGap) -> Duration {
        let perClaim = Duration.seconds(rowsPerPolledClaim / max(rowRate, pollingRate))
        return min(max(perClaim, gap), .seconds(1 / pollingRate))
    }

    func next(at now: ContinuousClock.Instant) -> Step {
        guard let last = lastClaim else { return .claim }
        var due = last + pollInterval
        if let retry = retriesDue.min() { due = min(due, retry) }
        if polling { due = min(due, last + pollingInterval) }
        if rowsMayWait { due = last }
        due = max(due, last + gap)
        return now >= due ? .claim : .wait(until: due, wakeEarly: !rowsMayWait)
    }
}

/// What reaches one app's claim loop from other tasks and threads: the schedule it claims
/// by, the doorbell that wakes it, and whether it waits for room (only then does a finished
/// send wake it).
final class ClaimLoopSignals: Sendable {
    let doorbell = Doorbell()
    let schedule: Locked<ClaimSchedule>
    private let waitsForRoom = Atomic<Bool>(false)

    init(pollInterval: Duration, largestClaim: Int) {
        schedule = Locked(ClaimSchedule(pollInterval: pollInterval, largestClaim: largestClaim))
    }

    /// A NOTIFY for the app.
    func rowsMayBeWaiting() {
        schedule.withLock { $0.rowsMayBeWaiting() }
        doorbell.ring()
    }

    /// A listener reconnect, rescued leases: rows of any age may be due.
    func rowsMayBeWaitingAnywhere() {
        schedule.withLock { $0.rowsMayBeWaitingAnywhere() }
        doorbell.ring()
    }

    func retryComesDue(at instant: ContinuousClock.Instant) {
        schedule.withLock { $0.retryComesDue(at: instant) }
        doorbell.ring()
    }

    /// Waits for a finished send while `hasRoom` is false. `hasRoom` is asked again after the
    /// flag is up, so a send finishing in between is never missed.
    func waitForRoom(timeout: Duration, hasRoom: () -> Bool) async {
        waitsForRoom.store(true, ordering: .sequentiallyConsistent)
        defer { waitsForRoom.store(false, ordering: .sequentiallyConsistent) }
        if hasRoom() { return }
        await doorbell.wait(timeout: timeout)
    }

    /// A send finished; `roomNow`: the loop could claim, or has nothing left in flight.
    func sendFinished(roomNow: Bool) {
        if roomNow && waitsForRoom.load(ordering: .sequentiallyConsistent) { doorbell.ring() }
    }
}
