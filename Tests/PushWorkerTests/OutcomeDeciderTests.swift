import APNsClient
import Foundation
import PGPushCore
@testable import PushWorker
import PushQueue
import Testing

@Suite struct OutcomeDeciderTests {
    let decider = OutcomeDecider(retry: .default)

    func row(attempts: Int = 1, claimCount: Int = 3, topic: String? = nil) -> ClaimedNotification {
        ClaimedNotification(
            notification: PushNotification(id: 7, app: "default", deviceToken: String(repeating: "ab", count: 32),
                                            pushType: "alert", priority: nil, topic: topic,
                                            payload: Array(#"{"aps":{"alert":"x"}}"#.utf8), collapseID: nil,
                                            expiration: nil, apnsID: UUID()),
            claimCount: claimCount, attempts: attempts)
    }

    func decide(_ answer: DeliveryResult, attempts: Int = 1, resends: Int = 0) -> OutcomeDecider.Decision {
        var random = SeededRandomNumberGenerator(seed: 42)
        var result = answer
        result.resends = resends
        return decider.decide(row(attempts: attempts), result, using: &random)
    }

    func failure(_ processing: Processing, _ cause: DeliveryFailure.Cause, goAwayReason: String? = nil) -> DeliveryResult {
        DeliveryResult(status: nil, failure: DeliveryFailure(processing: processing, cause: cause, apnsReason: goAwayReason, detail: "test"))
    }

    @Test func deliveredKeepsTheLeaseClaim() {
        let decision = decide(DeliveryResult(status: 200, reason: nil, timestamp: nil))
        #expect(decision.outcome == Outcome(id: 7, claimCount: 3, disposition: .delivered, httpStatus: 200))
        #expect(decision.pauseReason == nil)
    }

    @Test func serverErrorsRetryThreeTimesWithinOneToFiveSecondsThenFail() throws {
        for attempts in 1...3 {
            let decision = decide(DeliveryResult(status: 503, reason: "ServiceUnavailable", timestamp: nil), attempts: attempts)
            guard case .retry(let delay, let counts) = decision.outcome.disposition else {
                Issue.record("attempt \(attempts) should retry, got \(decision.outcome.disposition)")
                continue
            }
            #expect(counts)
            #expect(delay >= .seconds(1) && delay <= .seconds(5))
            #expect(decision.outcome.recordsError)
            #expect(decision.outcome.reason == "ServiceUnavailable")
        }
        let last = decide(DeliveryResult(status: 500, reason: "InternalServerError", timestamp: nil), attempts: 4)
        #expect(last.outcome.disposition == .failed)
        let silent = decide(failure(.mayHaveBeenProcessed, .deadlineExceeded), attempts: 4)
        #expect(silent.outcome.disposition == .failed)
        #expect(silent.outcome.reason == "DeadlineExceeded")
        #expect(silent.outcome.httpStatus == nil)
    }

    @Test func unregisteredFailsAndInvalidatesWithApplesTimestamp() {
        let when = Date(timeIntervalSince1970: 1_700_000_000)
        let decision = decide(DeliveryResult(status: 410, reason: "Unregistered", timestamp: when))
        #expect(decision.outcome.disposition == .failed)
        #expect(decision.outcome.invalidatesToken)
        #expect(decision.outcome.appleTimestamp == when)
        #expect(decision.outcome.recordsError)
    }

    @Test func credentialErrorsHoldTheRowAndPauseTheApp() {
        let decision = decide(DeliveryResult(status: 403, reason: "InvalidProviderToken", timestamp: nil))
        #expect(decision.outcome.disposition == .retry(after: DeliveryPolicy.pausedRowDelay, countsAsAttempt: false))
        #expect(decision.action == .pause(.app))
        #expect(decision.pauseReason == "InvalidProviderToken")
    }

    @Test func aRefusedFreshProviderTokenSaysWhatToCheck() {
        let decision = decide(DeliveryResult(status: 403, reason: "ExpiredProviderToken", timestamp: nil))
        #expect(decision.action == .pause(.app))
        #expect(decision.pauseReason?.contains("clock") == true)
        #expect(decision.outcome.reason == "ExpiredProviderToken")
    }

    @Test func aGoAwayReasonIsTheRowsReasonAndPausesTheApp() {
        let decision = decide(failure(.notProcessed, .goAway, goAwayReason: "BadCertificateEnvironment"))
        #expect(decision.action == .pause(.app))
        #expect(decision.outcome.reason == "BadCertificateEnvironment")
        #expect(decision.outcome.disposition == .retry(after: DeliveryPolicy.pausedRowDelay, countsAsAttempt: false))
    }

    @Test func aTopicAnswerPausesTheTopicOnlyUnlessTheRowNamedIt() {
        let decision = decide(DeliveryResult(status: 400, reason: "TopicDisallowed"))
        #expect(decision.action == .pause(.topic))
        var random = SeededRandomNumberGenerator(seed: 1)
        let own = decider.decide(row(topic: "com.example.app.voip"), DeliveryResult(status: 400, reason: "TopicDisallowed"),
                                 using: &random)
        #expect(own.outcome.disposition == .failed)
        let notForTopic = decider.decide(row(topic: "com.other.app"), DeliveryResult(status: 400, reason: "DeviceTokenNotForTopic"),
                                         using: &random)
        #expect(notForTopic.outcome.disposition == .failed)
        #expect(!notForTopic.outcome.invalidatesToken)
    }

    @Test func theAnswersUniqueIDIsKept() {
        let id = UUID()
        let decision = decide(DeliveryResult(status: 200, apnsUniqueID: id.uuidString.lowercased()))
        #expect(decision.outcome.apnsUniqueID == id)
    }

    @Test func notProcessedGoesBackWithoutAnAttemptOrAnErrorRow() {
        let decision = decide(failure(.notProcessed, .refusedStream), resends: 0)
        guard case .retry(_, let counts) = decision.outcome.disposition else {
            Issue.record("expected a retry, got \(decision.outcome.disposition)")
            return
        }
        #expect(!counts)
        #expect(!decision.outcome.recordsError)
        #expect(decision.outcome.keepsLastAnswer)
    }

    @Test func tooManyRequestsBacksOffExponentially() {
        var previous = Duration.zero
        for attempts in 1...4 {
            guard case .retry(let delay, true) = decide(DeliveryResult(status: 429, reason: "TooManyRequests", timestamp: nil),
                                                        attempts: attempts).outcome.disposition else {
                Issue.record("429 should retry")
                return
            }
            #expect(delay >= previous / 2)
            previous = delay
        }
        #expect(previous >= .seconds(4))
    }

    @Test func rejectedRowsFailWithThePGPushReason() {
        let outcome = decider.rejected(row(), ValidationFailure(.invalidPayload, "not JSON"))
        #expect(outcome.disposition == .failed)
        #expect(outcome.reason == "InvalidPayload")
        #expect(outcome.httpStatus == nil)
        #expect(outcome.recordsError)
    }
}

@Suite struct OutcomeDeciderEscalationTests {
    @Test func refusedStreamsPastTheResendCapSpendAnAttemptAndLeaveAnErrorRow() {
        let decider = OutcomeDecider(retry: .default)
        // Four counted attempts, and five earlier uncounted returns to the queue (9 claims).
        let row = OutcomeDeciderTests().row(attempts: 4, claimCount: 9)
        var random = SeededRandomNumberGenerator(seed: 1)
        var refused = DeliveryResult(status: nil, failure: DeliveryFailure(processing: .notProcessed, cause: .refusedStream, detail: "t"))
        refused.resends = 2
        let decision = decider.decide(row, refused, using: &random)
        #expect(decision.outcome.disposition == .failed)
        #expect(decision.outcome.recordsError)
        #expect(decision.outcome.reason == "RefusedStream")
    }

    @Test func refusedStreamsGoBackUncountedWhileUnderTheRequeueCap() {
        let decider = OutcomeDecider(retry: .default)
        var random = SeededRandomNumberGenerator(seed: 1)
        var refused = DeliveryResult(status: nil, failure: DeliveryFailure(processing: .notProcessed, cause: .goAway, detail: "t"))
        refused.resends = 2
        // The client resent twice already in this claim; the row itself was never requeued.
        let decision = decider.decide(OutcomeDeciderTests().row(attempts: 1, claimCount: 1), refused, using: &random)
        guard case .retry(_, false) = decision.outcome.disposition else {
            Issue.record("expected an uncounted requeue, got \(decision.outcome.disposition)")
            return
        }
        #expect(!decision.outcome.recordsError)
    }
}
