import Testing
@testable import PGPushCore

struct RetryPolicyTests {
    static func decide(
        _ outcome: OutcomeClass, attempts: Int, resends: Int = 0, configuration: RetryConfiguration = .default, seed: UInt64 = 7
    ) -> RetryDecision {
        var random = SeededRandomNumberGenerator(seed: seed)
        return RetryPolicy.decide(
            outcome, attempts: attempts, freshConnectionResends: resends, configuration: configuration, using: &random)
    }

    static func delay(_ decision: RetryDecision) -> Duration? {
        guard case .retry(let after, _) = decision else { return nil }
        return after
    }

    @Test func seededGeneratorIsDeterministic() {
        var first = SeededRandomNumberGenerator(seed: 42)
        var second = SeededRandomNumberGenerator(seed: 42)
        var other = SeededRandomNumberGenerator(seed: 43)
        let a = (0..<8).map { _ in first.next() }
        #expect(a == (0..<8).map { _ in second.next() })
        #expect(a != (0..<8).map { _ in other.next() })
    }

    @Test func sameSeedSameDecision() {
        for attempts in 1...3 {
            #expect(Self.decide(.retryServerError, attempts: attempts, seed: 99) == Self.decide(.retryServerError, attempts: attempts, seed: 99))
        }
    }

    @Test func serverErrorsRetryThreeTimesWithinOneToFiveSeconds() throws {
        for seed in UInt64(0)..<500 {
            for attempts in 1...3 {
                let decision = Self.decide(.retryServerError, attempts: attempts, seed: seed)
                let delay = try #require(Self.delay(decision))
                #expect(delay >= .seconds(1) && delay <= .seconds(5))
                #expect(decision == .retry(after: delay, countsAsAttempt: true))
            }
            #expect(Self.decide(.retryServerError, attempts: 4, seed: seed) == .fail(invalidatesToken: false))
        }
    }

    @Test func serverErrorDelaysAreSpreadOverTheRange() throws {
        let delays = try (UInt64(0)..<400).map { seed in
            try #require(Self.delay(Self.decide(.retryServerError, attempts: 1, seed: seed)))
        }
        #expect(delays.contains { $0 < .seconds(2) })
        #expect(delays.contains { $0 > .seconds(4) })
    }

    @Test func tooManyRequestsBacksOffExponentiallyWithEqualJitter() throws {
        // Steps 1, 2, 4, 8, 16, 32, 60 (capped) seconds; each delay lies in [step/2, step].
        let steps: [Int64] = [1, 2, 4, 8, 16, 32, 60]
        for seed in UInt64(0)..<200 {
            for (index, step) in steps.enumerated() {
                let delay = try #require(Self.delay(Self.decide(.backOffTooManyRequests, attempts: index + 1, seed: seed)))
                #expect(delay >= .seconds(step) / 2 && delay <= .seconds(step), "attempt \(index + 1)")
            }
            #expect(Self.decide(.backOffTooManyRequests, attempts: 8, seed: seed) == .fail(invalidatesToken: false))
        }
    }

    @Test func hugeAttemptCountsDoNotOverflow() throws {
        let configuration = RetryConfiguration(tooManyRequestsMaximumAttempts: .max)
        for attempts in [62, 63, 64, 1000, Int.max - 1] {
            let delay = try #require(Self.delay(Self.decide(.backOffTooManyRequests, attempts: attempts, configuration: configuration)))
            #expect(delay >= .seconds(30) && delay <= .seconds(60))
        }
    }

    @Test func configurationIsHonoured() throws {
        let configuration = RetryConfiguration(
            serverErrorRetries: 1, serverErrorDelay: .seconds(900) ... .seconds(900),
            tooManyRequestsBaseDelay: .milliseconds(100), tooManyRequestsMaximumDelay: .milliseconds(300),
            tooManyRequestsMaximumAttempts: 3, freshConnectionResends: 0)
        #expect(Self.decide(.retryServerError, attempts: 1, configuration: configuration) == .retry(after: .seconds(900), countsAsAttempt: true))
        #expect(Self.decide(.retryServerError, attempts: 2, configuration: configuration) == .fail(invalidatesToken: false))
        let second = try #require(Self.delay(Self.decide(.backOffTooManyRequests, attempts: 2, configuration: configuration)))
        #expect(second >= .milliseconds(100) && second <= .milliseconds(200))
        #expect(Self.decide(.backOffTooManyRequests, attempts: 3, configuration: configuration) == .fail(invalidatesToken: false))
        #expect(Self.decide(.refreshProviderToken, attempts: 1, configuration: configuration) == .holdForApp)
    }

    @Test func providerTokenProblemsResendOnAFreshConnectionUncounted() {
        #expect(Self.decide(.refreshProviderToken, attempts: 1) == .resendOnFreshConnection(signNewProviderToken: true))
        #expect(Self.decide(.signingBug, attempts: 1) == .resendOnFreshConnection(signNewProviderToken: false))
        #expect(Self.decide(.refreshProviderToken, attempts: 1, resends: 1) == .resendOnFreshConnection(signNewProviderToken: true))
        #expect(Self.decide(.refreshProviderToken, attempts: 1, resends: 2) == .holdForApp)
        #expect(Self.decide(.signingBug, attempts: 1, resends: 2) == .holdForApp)
    }

    @Test func unprocessedStreamsResendUncountedThenCountAsLostResponses() throws {
        #expect(Self.decide(.notProcessed, attempts: 1) == .resendOnFreshConnection(signNewProviderToken: false))
        #expect(Self.decide(.notProcessed, attempts: 1, resends: 4) == .resendOnFreshConnection(signNewProviderToken: false))
        let delay = try #require(Self.delay(Self.decide(.notProcessed, attempts: 1, resends: 5)))
        #expect(delay >= .seconds(1) && delay <= .seconds(5))
        #expect(Self.decide(.notProcessed, attempts: 4, resends: 5) == .fail(invalidatesToken: false))
    }

    @Test func finalOutcomes() {
        #expect(Self.decide(.delivered, attempts: 1) == .delivered)
        #expect(Self.decide(.tokenInvalid, attempts: 1) == .fail(invalidatesToken: true))
        #expect(Self.decide(.permanentFailure, attempts: 1) == .fail(invalidatesToken: false))
        #expect(Self.decide(.appMisconfigured, attempts: 1) == .holdForApp)
    }

    @Test(arguments: OutcomeClass.allCases)
    func nonsenseInputsStillDecide(outcome: OutcomeClass) {
        for attempts in [Int.min, -1, 0, 1, Int.max] {
            for resends in [Int.min, -1, 0, Int.max] {
                _ = Self.decide(outcome, attempts: attempts, resends: resends)
            }
        }
        let inverted = RetryConfiguration(
            serverErrorRetries: -5, serverErrorDelay: .seconds(-10) ... .seconds(-1),
            tooManyRequestsBaseDelay: .seconds(-1), tooManyRequestsMaximumDelay: .seconds(-5),
            tooManyRequestsMaximumAttempts: -1, freshConnectionResends: -1)
        _ = Self.decide(outcome, attempts: 1, configuration: inverted)
    }
}
