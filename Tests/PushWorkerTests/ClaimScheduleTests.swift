@testable import PushWorker
import Testing

/// When a claim loop claims, on a clock that moves only when the test says so.
struct ClaimScheduleTests {
    private let start = ContinuousClock.now
    private let poll: Duration = .seconds(1)
    private let gap: Duration = .milliseconds(5)

    private func schedule() -> ClaimSchedule { ClaimSchedule(gap: gap, pollInterval: poll, largestClaim: 1000) }

    @Test func theFirstClaimIsAtOnce() {
        #expect(schedule().next(at: start) == .claim)
    }

    @Test func afterAClaimThatDrainedTheQueueOnlyNewsOrThePollClaims() {
        var schedule = schedule()
        schedule.claimStarted(at: start)
        schedule.claimEnded(taken: 3, asked: 100)
        // A finished send, or any wake-up that is not news, finds nothing to do.
        #expect(schedule.next(at: start + .milliseconds(300)) == .wait(until: start + poll, wakeEarly: true))
        #expect(schedule.next(at: start + poll) == .claim)
    }

    @Test func aNotifyClaimsAtOnceAfterAQuietSpell() {
        var schedule = schedule()
        schedule.claimStarted(at: start)
        schedule.claimEnded(taken: 0, asked: 100)
        schedule.rowsMayBeWaiting()
        #expect(schedule.next(at: start + .milliseconds(10)) == .claim)
    }

    @Test func notifiesInABurstShareOneClaimAfterTheGap() {
        var schedule = schedule()
        schedule.claimStarted(at: start)
        schedule.claimEnded(taken: 1, asked: 100)
        schedule.rowsMayBeWaiting()
        // Known to wait: sleep through further NOTIFYs until the gap has passed.
        #expect(schedule.next(at: start + .milliseconds(1)) == .wait(until: start + gap, wakeEarly: false))
        schedule.rowsMayBeWaiting()
        #expect(schedule.next(at: start + gap) == .claim)
    }

    @Test func aNotifyDuringAClaimMakesOneMore() {
        var schedule = schedule()
        schedule.claimStarted(at: start)
        schedule.rowsMayBeWaiting()
        schedule.claimEnded(taken: 2, asked: 100)
        #expect(schedule.next(at: start + gap) == .claim)
    }

    @Test func aFullClaimIsFollowedByAnotherAfterTheGap() {
        var schedule = schedule()
        schedule.claimStarted(at: start)
        schedule.claimEnded(taken: 100, asked: 100)
        #expect(schedule.next(at: start + .milliseconds(2)) == .wait(until: start + gap, wakeEarly: false))
        #expect(schedule.next(at: start + gap) == .claim)
    }

    /// Rows inserted evenly at `rate` per second, each with its NOTIFY, claimed by the loop as
    /// `schedule` says, for `seconds`; returns the claims made (at which instant, how many rows).
    private func simulate(_ schedule: inout ClaimSchedule, rate: Int, seconds: Int,
                          from begin: ContinuousClock.Instant) -> [(at: ContinuousClock.Instant, taken: Int)] {
        let spacing = Duration.seconds(1) / rate
        var claims: [(at: ContinuousClock.Instant, taken: Int)] = []
        var claimed = 0
        var now = begin
        let end = begin + .seconds(seconds)
        while now < end {
            let inserted = Int((begin.duration(to: now)) / spacing) + 1
            if inserted > claimed { schedule.rowsMayBeWaiting() }  // the NOTIFYs since the last look
            switch schedule.next(at: now) {
            case .claim:
                schedule.claimStarted(at: now)
                schedule.claimEnded(taken: inserted - claimed, asked: 100)
                claims.append((now, inserted - claimed))
                claimed = inserted
                now = now + .microseconds(1)
            case .wait(let until, let wakeEarly):
                // A NOTIFY wakes an early wait when the next row comes before `until`.
                let nextRow = begin + spacing * inserted
                now = wakeEarly && !schedule.polling ? min(until, nextRow) : until
            }
        }
        return claims
    }

    /// Rows faster than the gap: after a few claims that each follow a NOTIFY the loop claims
    /// every gap without one; when the rows stop, it claims at longer intervals (at most
    /// `1 / pollingRate`) and listens again after about a dozen empty claims.
    @Test func rowsAtAThousandASecondAreClaimedEveryGapUntilTheyStop() {
        var schedule = schedule()
        let claims = simulate(&schedule, rate: 1000, seconds: 1, from: start)
        #expect(schedule.polling)
        // Polling from the fourth claim on at the latest, every gap from the tenth on.
        #expect(claims.count > 150)
        for (earlier, later) in zip(claims.dropFirst(10), claims.dropFirst(11)) {
            #expect(earlier.at.duration(to: later.at) < gap + .milliseconds(1))
        }
        var now = claims.last!.at
        var emptyClaims = 0
        while schedule.polling {
            guard case .wait(let until, let wakeEarly) = schedule.next(at: now + .microseconds(1)) else {
                Issue.record("claims at once"); return
            }
            #expect(until - now >= gap && until - now <= .milliseconds(20) && wakeEarly)
            now = until
            schedule.claimStarted(at: now)
            schedule.claimEnded(taken: 0, asked: 100)
            emptyClaims += 1
        }
        #expect(emptyClaims <= 13)
        // Listening again: the next claim waits for news or the poll interval.
        #expect(schedule.next(at: now + gap) == .wait(until: now + poll, wakeEarly: true))
    }

    /// Rows at 100/s: the loop polls, a claim per two rows' interval (20 ms, the longest a
    /// polled row waits), and keeps polling when a claim finds fewer or more now and then.
    @Test func rowsAtAHundredASecondArePolledTwoAClaim() {
        var schedule = schedule()
        let claims = simulate(&schedule, rate: 100, seconds: 2, from: start)
        #expect(schedule.polling)
        #expect(schedule.pollingInterval > .milliseconds(19) && schedule.pollingInterval <= .milliseconds(20))
        // Half as many claims as rows, give or take the start (NOTIFYs, then polling).
        #expect(claims.count >= 90 && claims.count <= 115, "\(claims.count) claims")
        #expect(claims.dropFirst(20).allSatisfy { $0.taken >= 1 && $0.taken <= 3 })
        var now = claims.last!.at
        for taken in [2, 1, 3, 2, 0, 1, 4, 2, 2, 3, 1, 2] {
            guard case .wait(let until, _) = schedule.next(at: now + .microseconds(1)) else {
                Issue.record("claims before its interval"); return
            }
            now = until
            schedule.claimStarted(at: now)
            schedule.claimEnded(taken: taken, asked: 100)
            #expect(schedule.polling)
        }
    }

    /// The interval between polled claims: two rows' worth, never longer than 20 ms (at 50 and
    /// 100 rows/s) nor shorter than the gap (from 400/s). The bench's floor claims by it too.
    @Test func polledClaimsComeEveryTwoRowsWithinTheGapAndTwentyMilliseconds() {
        let interval = { (rate: Double) in ClaimSchedule.pollingInterval(rowRate: rate) }
        #expect(interval(50) == .milliseconds(20))
        #expect(interval(100) == .milliseconds(20))
        #expect(interval(200) == .milliseconds(10))
        #expect(interval(400) == gap)
        #expect(interval(1000) == gap)
    }

    /// Rows slower than `pollingRate`, or a burst after a quiet spell, are claimed after their
    /// NOTIFYs: polling would cost more empty claims than the NOTIFYs it saves.
    @Test func rowsBelowThePollingRateAreClaimedOnNews() {
        var schedule = schedule()
        for claim in 0..<20 {
            schedule.claimStarted(at: start + .milliseconds(40) * claim)
            schedule.claimEnded(taken: 1, asked: 100)
            #expect(!schedule.polling)
        }
        var burst = self.schedule()
        burst.claimStarted(at: start)
        burst.claimEnded(taken: 0, asked: 100)
        burst.claimStarted(at: start + poll)
        burst.claimEnded(taken: 20, asked: 100)
        #expect(!burst.polling)
    }

    /// A failed claim forgets the rate: after an outage the loop listens.
    @Test func aFailedClaimStopsPolling() {
        var schedule = schedule()
        for claim in 0..<10 {
            schedule.claimStarted(at: start + gap * claim)
            schedule.claimEnded(taken: 5, asked: 100)
        }
        #expect(schedule.polling)
        schedule.claimStarted(at: start + gap * 10)
        schedule.claimFailed()
        #expect(!schedule.polling && schedule.rowRate == 0)
    }

    /// A claim after news looks back only to a little before the previous claim; every due
    /// row is read by the first claim, after a full or failed claim, after rows of any age
    /// may have come back, and at least once per poll interval.
    @Test func claimsAfterNewsLookBackToJustBeforeThePreviousClaim() {
        var schedule = schedule()
        let allowance = ClaimSchedule.lateCommitAllowance
        #expect(schedule.claimStarted(at: start) == nil)
        schedule.claimEnded(taken: 3, asked: 100)
        schedule.rowsMayBeWaiting()
        var now = start + .milliseconds(10)
        #expect(schedule.claimStarted(at: now) == .milliseconds(10) + allowance)
        schedule.claimEnded(taken: 1, asked: 100)

        // A full claim left rows behind, of any age.
        now = now + .milliseconds(10)
        #expect(schedule.claimStarted(at: now) == .milliseconds(10) + allowance)
        schedule.claimEnded(taken: 100, asked: 100)
        now = now + gap
        #expect(schedule.claimStarted(at: now) == nil)
        schedule.claimEnded(taken: 5, asked: 100)

        // A failed claim: whatever it was for may be old by now.
        now = now + gap
        #expect(schedule.claimStarted(at: now) == gap + allowance)
        schedule.claimFailed()
        now = now + gap
        #expect(schedule.claimStarted(at: now) == nil)
        schedule.claimEnded(taken: 0, asked: 100)

        // Rescued leases, a listener back after an outage: rows of any age.
        now = now + gap
        #expect(schedule.claimStarted(at: now) == gap + allowance)
        schedule.claimEnded(taken: 0, asked: 100)
        schedule.rowsMayBeWaitingAnywhere()
        now = now + gap
        #expect(schedule.claimStarted(at: now) == nil)
        schedule.claimEnded(taken: 0, asked: 100)

        // Once per poll interval in any case (rows scheduled or put back by others).
        let lastFull = now
        while now < lastFull + poll - gap {
            now = now + gap
            #expect(schedule.claimStarted(at: now) == gap + allowance)
            schedule.claimEnded(taken: 2, asked: 100)
        }
        #expect(schedule.claimStarted(at: lastFull + poll) == nil)
    }

    @Test func aRetryOfOursIsClaimedWhenItComesDueNotAtThePoll() {
        var schedule = schedule()
        schedule.claimStarted(at: start)
        schedule.claimEnded(taken: 1, asked: 100)
        schedule.retryComesDue(at: start + .milliseconds(400))
        schedule.retryComesDue(at: start + .milliseconds(700))
        #expect(schedule.next(at: start + .milliseconds(100)) == .wait(until: start + .milliseconds(400), wakeEarly: true))
        #expect(schedule.next(at: start + .milliseconds(400)) == .claim)
        // The claim at 400 ms takes the first retry; the later one keeps its own time.
        schedule.claimStarted(at: start + .milliseconds(400))
        schedule.claimEnded(taken: 1, asked: 100)
        #expect(schedule.next(at: start + .milliseconds(500)) == .wait(until: start + .milliseconds(700), wakeEarly: true))
    }

    @Test func aFailedClaimIsTriedAgain() {
        var schedule = schedule()
        schedule.claimStarted(at: start)
        schedule.claimFailed()
        #expect(schedule.next(at: start + gap) == .claim)
    }

    /// A claim the database cancels for time is asked again at half the size, down to one row;
    /// claims that go through grow it back, doubling after every eight.
    @Test func aClaimCancelledForTimeShrinksTheNextAndSuccessesGrowItBack() {
        var schedule = schedule()
        #expect(schedule.claimSize.current == 1000)
        schedule.claimStarted(at: start)
        schedule.claimFailed()
        #expect(schedule.claimSize.current == 1000)
        for expected in [500, 250, 125, 62, 31, 15, 7, 3, 1, 1] {
            schedule.claimFailed(timedOut: true)
            #expect(schedule.claimSize.current == expected)
        }
        #expect(schedule.next(at: start + gap) == .claim)
        var sizes: [Int] = []
        for _ in 0..<(AdaptiveBatchSize.successesBeforeGrowing * 11) {
            schedule.claimEnded(taken: 1, asked: 1)
            sizes.append(schedule.claimSize.current)
        }
        #expect(sizes.first == 1)
        #expect(sizes[AdaptiveBatchSize.successesBeforeGrowing - 1] == 2)
        #expect(sizes.last == 1000)
        #expect(Set(sizes).count == 11)
    }

    /// The size rule and the wait-for-room check are one function: a probing app with its
    /// probe in flight once claimed nothing yet found "room", and its loop spun.
    @Test func aProbingAppClaimsOneRowAloneAndOtherwiseWaits() {
        let target = 100
        #expect(Worker.claimLimit(.probing, target: target, inFlight: 0) == 1)
        #expect(Worker.claimLimit(.probing, target: target, inFlight: 1) == nil)
        #expect(Worker.claimLimit(.paused(until: start), target: target, inFlight: 0) == nil)
        #expect(Worker.claimLimit(.healthy, target: target, inFlight: 0) == 100)
        // Small top-ups wait for a quarter of the window, unless nothing is in flight.
        #expect(Worker.claimLimit(.healthy, target: target, inFlight: 80) == nil)
        #expect(Worker.claimLimit(.healthy, target: target, inFlight: 75) == 25)
    }
}
