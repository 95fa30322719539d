import Testing
@testable import PGPushCore

/// `RetryRules`: when a row the verdict gives another chance is due again, for every service.
struct RetryRulesTests {
    static func action(_ verdict: Verdict, attempts: Int, requeues: Int = 0,
                       configuration: RetryConfiguration = .default, seed: UInt64 = 7) -> RetryRules.Next? {
        var random = SeededRandomNumberGenerator(seed: seed)
        return RetryRules.next(after: verdict, history: RowHistory(attempts: attempts, uncountedRequeues: requeues),
                               retry: configuration, using: &random)
    }

    static func delay(_ next: RetryRules.Next?) -> Duration? {
        guard case .retry(let after, _)? = next else { return nil }
        return after
    }

    static let serverTrouble = Verdict.serverTrouble(notBefore: nil)
    static let throttled = Verdict.throttled(retryAfter: nil, from: nil)


    @Test func seededGeneratorIsDeterministic() {
        var first = SeededRandomNumberGenerator(seed: 42)
        var second = SeededRandomNumberGenerator(seed: 42)
        var other = SeededRandomNumberGenerator(seed: 43)
        let a = (0..<8).map { _ in first.next() }
        #expect(a == (0..<8).map { _ in second.next() })
        #expect(a != (0..<8).map { _ in other.next() })
    }

    @Test func serverTroubleRetriesThreeTimesWithinOneToFiveSeconds() throws {
        for seed in UInt64(0)..<500 {
            for attempts in 1...3 {
                let action = Self.action(Self.serverTrouble, attempts: attempts, seed: seed)
                let delay = try #require(Self.delay(action))
                #expect(delay >= .seconds(1) && delay <= .seconds(5))
                #expect(action == .retry(after: delay, counted: true))
            }
            #expect(Self.action(Self.serverTrouble, attempts: 4, seed: seed) == .exhausted)
        }
    }

    @Test func serverTroubleDelaysAreSpreadOverTheRange() throws {
        let delays = try (UInt64(0)..<400).map { seed in
            try #require(Self.delay(Self.action(Self.serverTrouble, attempts: 1, seed: seed)))
        }
        #expect(delays.contains { $0 < .seconds(2) })
        #expect(delays.contains { $0 > .seconds(4) })
    }

    @Test func deviceThrottlingBacksOffExponentiallyWithEqualJitter() throws {
        // Steps 1, 2, 4, 8, 16, 32, 60 (capped) seconds; each delay lies in [step/2, step].
        let steps: [Int64] = [1, 2, 4, 8, 16, 32, 60]
        for seed in UInt64(0)..<200 {
            for (index, step) in steps.enumerated() {
                let delay = try #require(Self.delay(Self.action(Self.throttled, attempts: index + 1, seed: seed)))
                #expect(delay >= .seconds(step) / 2 && delay <= .seconds(step), "attempt \(index + 1)")
            }
            #expect(Self.action(Self.throttled, attempts: 8, seed: seed) == .exhausted)
        }
    }

    @Test func hugeAttemptCountsDoNotOverflow() throws {
        let configuration = RetryConfiguration(tooManyRequestsMaximumAttempts: .max)
        for attempts in [62, 63, 64, 1000, Int.max - 1] {
            let delay = try #require(Self.delay(Self.action(Self.throttled, attempts: attempts, configuration: configuration)))
            #expect(delay >= .seconds(30) && delay <= .seconds(60))
        }
    }

    @Test func retrySettingsAreHonoured() throws {
        let configuration = RetryConfiguration(
            serverErrorRetries: 1, serverErrorDelay: .seconds(900) ... .seconds(900),
            tooManyRequestsBaseDelay: .milliseconds(100), tooManyRequestsMaximumDelay: .milliseconds(300),
            tooManyRequestsMaximumAttempts: 3)
        #expect(Self.action(Self.serverTrouble, attempts: 1, configuration: configuration) == .retry(after: .seconds(900), counted: true))
        #expect(Self.action(Self.serverTrouble, attempts: 2, configuration: configuration) == .exhausted)
        let second = try #require(Self.delay(Self.action(Self.throttled, attempts: 2, configuration: configuration)))
        #expect(second >= .milliseconds(100) && second <= .milliseconds(200))
        #expect(Self.action(Self.throttled, attempts: 3, configuration: configuration) == .exhausted)
    }

    @Test func unprocessedRequestsRequeueUncountedThenCountAsLostAnswers() throws {
        let first = try #require(Self.delay(Self.action(.notProcessed, attempts: 1)))
        #expect(RetryRules.requeueDelay.contains(first))
        #expect(Self.action(.notProcessed, attempts: 1, requeues: 4) == .retry(after: Self.delay(Self.action(.notProcessed, attempts: 1, requeues: 4))!, counted: false))
        let delay = try #require(Self.delay(Self.action(.notProcessed, attempts: 1, requeues: 5)))
        #expect(delay >= .seconds(1) && delay <= .seconds(5))
        #expect(Self.action(.notProcessed, attempts: 4, requeues: 5) == .exhausted)
    }

    @Test func aServiceCanAskForALaterRetryThanTheRuleWould() throws {
        // Retry-After on a 5xx: never sooner than asked.
        let late = try #require(Self.delay(Self.action(.serverTrouble(notBefore: .seconds(30)), attempts: 1)))
        #expect(late == .seconds(30))
        // Retry-After on a 429 is taken as given; without it, the back-off starts from the
        // service's own floor (FCM: 60 s), never below it.
        #expect(Self.action(.throttled(retryAfter: .seconds(7), from: .seconds(60)), attempts: 1) == .retry(after: .seconds(7), counted: true))
        let first = try #require(Self.delay(Self.action(.throttled(retryAfter: nil, from: .seconds(60)), attempts: 1)))
        #expect(first >= .seconds(60) && first <= .seconds(90))
        let second = try #require(Self.delay(Self.action(.throttled(retryAfter: nil, from: .seconds(60)), attempts: 2)))
        #expect(second >= .seconds(120) && second <= .seconds(180))
        let capped = try #require(Self.delay(Self.action(.throttled(retryAfter: nil, from: .seconds(60)), attempts: 7)))
        #expect(capped >= .seconds(480) && capped <= .seconds(720))
    }

    @Test func verdictsWithoutAnotherChanceHaveNoRetry() {
        for verdict: Verdict in [.delivered, .failed(listsTarget: true), .failed(listsTarget: false),
                                 .paused(.service, reason: "x"), .paused(.requestScope, reason: "x")] {
            #expect(Self.action(verdict, attempts: 1) == nil)
        }
    }

    @Test(arguments: [Verdict.serverTrouble(notBefore: nil), .serverTrouble(notBefore: .seconds(-5)), .notProcessed,
                      .throttled(retryAfter: nil, from: nil), .throttled(retryAfter: nil, from: .seconds(-1)),
                      .throttled(retryAfter: nil, from: .seconds(Int64.max))])
    func nonsenseInputsStillDecide(verdict: Verdict) {
        for attempts in [Int.min, -1, 0, 1, Int.max] {
            for requeues in [Int.min, -1, 0, Int.max] {
                _ = Self.action(verdict, attempts: attempts, requeues: requeues)
            }
        }
        let inverted = RetryConfiguration(
            serverErrorRetries: -5, serverErrorDelay: .seconds(-10) ... .seconds(-1),
            tooManyRequestsBaseDelay: .seconds(-1), tooManyRequestsMaximumDelay: .seconds(-5),
            tooManyRequestsMaximumAttempts: -1)
        _ = Self.action(verdict, attempts: 1, configuration: inverted)
    }
}
