import APNsClient
import APNsCore
import Foundation
import PGPushCore
import PushQueue
import PushTransport
@testable import PushWorker
import Testing

/// APNs answers through `DeliveryPolicy` and then the shared `OutcomeDecider`: the whole pure
/// path from an answer to the row's outcome.
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

    func answer(_ status: Int, _ reason: String? = nil, timestamp: Date? = nil, uniqueID: UUID? = nil,
                topicIsExplicit: Bool = false) -> Delivery {
        DeliveryPolicy.delivery(status: status, body: reason.map { APNsErrorBody(reason: $0, timestamp: timestamp) },
                                uniqueID: uniqueID, topicIsExplicit: topicIsExplicit)
    }

    func decide(_ delivery: Delivery, attempts: Int = 1) -> Outcome {
        var random = SeededRandomNumberGenerator(seed: 42)
        return decider.decide(row(attempts: attempts), delivery, using: &random)
    }

    func failure(_ processing: Processing, _ cause: DeliveryFailure.Cause, goAwayReason: String? = nil) -> Delivery {
        DeliveryPolicy.delivery(failure: DeliveryFailure(processing: processing, cause: cause, serviceReason: goAwayReason,
                                                         detail: "test"), topicIsExplicit: false)
    }

    @Test func deliveredKeepsTheLeaseClaim() {
        #expect(decide(answer(200)) == Outcome(id: 7, claimCount: 3, disposition: .delivered, httpStatus: 200))
    }

    @Test func serverErrorsRetryThreeTimesWithinOneToFiveSecondsThenFail() throws {
        for attempts in 1...3 {
            let outcome = decide(answer(503, "ServiceUnavailable"), attempts: attempts)
            guard case .retry(let delay, let counts) = outcome.disposition else {
                Issue.record("attempt \(attempts) should retry, got \(outcome.disposition)")
                continue
            }
            #expect(counts)
            #expect(delay >= .seconds(1) && delay <= .seconds(5))
            #expect(outcome.recordsError)
            #expect(outcome.reason == "ServiceUnavailable")
        }
        let last = decide(answer(500, "InternalServerError"), attempts: 4)
        #expect(last.disposition == .failed)
        let silent = decide(failure(.mayHaveBeenProcessed, .deadlineExceeded), attempts: 4)
        #expect(silent.disposition == .failed)
        #expect(silent.reason == "DeadlineExceeded")
        #expect(silent.httpStatus == nil)
    }

    @Test func unregisteredFailsAndInvalidatesWithApplesTimestamp() {
        let when = Date(timeIntervalSince1970: 1_700_000_000)
        let outcome = decide(answer(410, "Unregistered", timestamp: when))
        #expect(outcome.disposition == .failed)
        #expect(outcome.invalidatesToken)
        #expect(outcome.appleTimestamp == when)
        #expect(outcome.recordsError)
    }

    @Test func credentialErrorsHoldTheRowAndPauseTheApp() {
        let delivery = answer(403, "InvalidProviderToken")
        #expect(decide(delivery).disposition == .retry(after: RetryRules.pausedRowDelay, countsAsAttempt: false))
        #expect(delivery.verdict == .paused(.service, reason: "InvalidProviderToken"))
    }

    @Test func aRefusedFreshProviderTokenSaysWhatToCheck() {
        let delivery = answer(403, "ExpiredProviderToken")
        guard case .paused(.service, let reason) = delivery.verdict else {
            Issue.record("expected the app paused, got \(delivery.verdict)")
            return
        }
        #expect(reason.contains("clock"))
        #expect(decide(delivery).reason == "ExpiredProviderToken")
    }

    @Test func aGoAwayReasonIsTheRowsReasonAndPausesTheApp() {
        let delivery = failure(.notProcessed, .goAway, goAwayReason: "BadCertificateEnvironment")
        #expect(delivery.verdict == .paused(.service, reason: "BadCertificateEnvironment"))
        #expect(decide(delivery).reason == "BadCertificateEnvironment")
        #expect(decide(delivery).disposition == .retry(after: RetryRules.pausedRowDelay, countsAsAttempt: false))
    }

    @Test func aTopicAnswerPausesTheTopicOnlyUnlessTheRowNamedIt() {
        #expect(answer(400, "TopicDisallowed").verdict == .paused(.requestScope, reason: "TopicDisallowed"))
        var random = SeededRandomNumberGenerator(seed: 1)
        let own = decider.decide(row(topic: "com.example.app.voip"), answer(400, "TopicDisallowed", topicIsExplicit: true),
                                 using: &random)
        #expect(own.disposition == .failed)
        let notForTopic = decider.decide(row(topic: "com.other.app"), answer(400, "DeviceTokenNotForTopic", topicIsExplicit: true),
                                         using: &random)
        #expect(notForTopic.disposition == .failed)
        #expect(!notForTopic.invalidatesToken)
    }

    @Test func theAnswersUniqueIDIsKept() {
        let id = UUID()
        #expect(decide(answer(200, uniqueID: id)).apnsUniqueID == id)
    }

    @Test func notProcessedGoesBackWithoutAnAttemptOrAnErrorRow() {
        let outcome = decide(failure(.notProcessed, .refusedStream))
        guard case .retry(_, let counts) = outcome.disposition else {
            Issue.record("expected a retry, got \(outcome.disposition)")
            return
        }
        #expect(!counts)
        #expect(!outcome.recordsError)
        #expect(outcome.keepsLastAnswer)
    }

    @Test func tooManyRequestsBacksOffExponentially() {
        var previous = Duration.zero
        for attempts in 1...4 {
            guard case .retry(let delay, true) = decide(answer(429, "TooManyRequests"), attempts: attempts).disposition else {
                Issue.record("429 should retry")
                return
            }
            #expect(delay >= previous / 2)
            previous = delay
        }
        #expect(previous >= .seconds(4))
    }

    @Test func rejectedRowsFailWithThePGPushReason() {
        let outcome = decider.rejected(row(), RowRefusal(reason: "InvalidPayload", detail: "not JSON"))
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
        let refused = OutcomeDeciderTests().failure(.notProcessed, .refusedStream)
        let outcome = decider.decide(row, refused, using: &random)
        #expect(outcome.disposition == .failed)
        #expect(outcome.recordsError)
        #expect(outcome.reason == "RefusedStream")
    }

    @Test func refusedStreamsGoBackUncountedWhileUnderTheRequeueCap() {
        let decider = OutcomeDecider(retry: .default)
        var random = SeededRandomNumberGenerator(seed: 1)
        var refused = OutcomeDeciderTests().failure(.notProcessed, .goAway)
        refused.resends = 2
        // The client resent twice already in this claim; the row itself was never requeued.
        let outcome = decider.decide(OutcomeDeciderTests().row(attempts: 1, claimCount: 1), refused, using: &random)
        guard case .retry(_, false) = outcome.disposition else {
            Issue.record("expected an uncounted requeue, got \(outcome.disposition)")
            return
        }
        #expect(!outcome.recordsError)
    }
}
