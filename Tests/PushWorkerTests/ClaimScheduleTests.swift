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

    /// Rows faster than the gap (claims that keep taking two or more): the loop claims every
    /// gap without waiting for a NOTIFY, until a claim finds nothing.
    @Test func busyClaimsInARowMakeTheLoopPollEveryGapUntilAClaimFindsNothing() {
        var schedule = schedule()
        var now = start
        for claim in 1...ClaimSchedule.claimsBeforePolling {
            #expect(!schedule.polling)
            schedule.claimStarted(at: now)
            schedule.claimEnded(taken: 3, asked: 100)
            if claim < ClaimSchedule.claimsBeforePolling {
                #expect(schedule.next(at: now + gap) == .wait(until: now + poll, wakeEarly: true))
                schedule.rowsMayBeWaiting()
            }
            now = now + gap
        }
        #expect(schedule.polling)
        // No NOTIFY needed: the next claim is due one gap after the last.
        #expect(schedule.next(at: now - .milliseconds(1)) == .wait(until: now, wakeEarly: false))
        #expect(schedule.next(at: now) == .claim)
        schedule.claimStarted(at: now)
        schedule.claimEnded(taken: 1, asked: 100)
        #expect(schedule.polling && schedule.next(at: now + gap) == .claim)
        schedule.claimStarted(at: now + gap)
        schedule.claimEnded(taken: 0, asked: 100)
        #expect(!schedule.polling)
        #expect(schedule.next(at: now + gap * 2) == .wait(until: now + gap + poll, wakeEarly: true))
    }

    /// One busy claim, or busy claims broken by a quiet one, is not a stream.
    @Test func busyClaimsNotInARowDoNotPoll() {
        var schedule = schedule()
        for claim in 0..<10 {
            schedule.claimStarted(at: start + gap * claim)
            schedule.claimEnded(taken: claim % ClaimSchedule.claimsBeforePolling == 0 ? 1 : 5, asked: 100)
            #expect(!schedule.polling)
        }
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
