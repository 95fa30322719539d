import Testing
@testable import PGPushCore

/// `DeliveryPolicy` row by row: Apple's reasons, the status fallback, the client's steps
/// and what becomes of the row.
struct DeliveryPolicyTests {
    /// Apple's `/3/device`, broadcast and channel management reasons with the status Apple
    /// lists and the meaning pgpush gives each.
    static let table: [(reason: String, status: Int, meaning: AnswerMeaning)] = [
        ("BadCollapseId", 400, .rowRejected),
        ("BadDeviceToken", 400, .deadToken),
        ("BadExpirationDate", 400, .rowRejected),
        ("BadMessageId", 400, .rowRejected),
        ("BadPriority", 400, .rowRejected),
        ("BadTopic", 400, .topicRefused),
        ("DeviceTokenNotForTopic", 400, .deadToken),
        ("DuplicateHeaders", 400, .rowRejected),
        ("IdleTimeout", 400, .serverTrouble),
        ("InvalidPushType", 400, .rowRejected),
        ("MissingDeviceToken", 400, .rowRejected),
        ("MissingTopic", 400, .credentialsRefused),
        ("PayloadEmpty", 400, .rowRejected),
        ("TopicDisallowed", 400, .topicRefused),
        ("BadCertificate", 403, .credentialsRefused),
        ("BadCertificateEnvironment", 403, .credentialsRefused),
        ("ExpiredProviderToken", 403, .providerTokenExpired),
        ("Forbidden", 403, .rowRejected),
        ("InvalidProviderToken", 403, .credentialsRefused),
        ("MissingProviderToken", 403, .credentialsRefused),
        ("UnrelatedKeyIdInToken", 403, .credentialsRefused),
        ("BadEnvironmentKeyIdInToken", 403, .credentialsRefused),
        ("BadEnvironmentKeyInToken", 403, .credentialsRefused),
        ("BadPath", 404, .rowRejected),
        ("MethodNotAllowed", 405, .rowRejected),
        ("ExpiredToken", 410, .deadToken),
        ("Unregistered", 410, .deadToken),
        ("PayloadTooLarge", 413, .rowRejected),
        ("TooManyProviderTokenUpdates", 429, .providerTokenUpdatedTooOften),
        ("TooManyRequests", 429, .deviceThrottled),
        ("InternalServerError", 500, .serverTrouble),
        ("ServiceUnavailable", 503, .serverTrouble),
        ("Shutdown", 503, .serverTrouble),
        ("FeatureNotEnabled", 400, .channelRefused),
        ("MissingChannelId", 400, .channelRefused),
        ("BadChannelId", 400, .channelRefused),
        ("ChannelNotRegistered", 400, .channelRefused),
        ("BadRequestParams", 400, .rowRejected),
        ("BadRequestPayload", 400, .rowRejected),
        ("MissingPushType", 400, .rowRejected),
        ("CannotCreateChannelConfig", 400, .rowRejected),
        ("TopicMismatch", 403, .credentialsRefused),
    ]

    static func meaning(_ status: Int, _ reason: String?, explicitTopic: Bool = false) -> AnswerMeaning {
        DeliveryPolicy.meaning(of: .answered(status: status, reason: reason), topicWasExplicit: explicitTopic)
    }

    static func action(_ meaning: AnswerMeaning, attempts: Int, requeues: Int = 0,
                       configuration: RetryConfiguration = .default, seed: UInt64 = 7) -> RowAction {
        var random = SeededRandomNumberGenerator(seed: seed)
        return DeliveryPolicy.rowAction(for: meaning, history: RowHistory(attempts: attempts, uncountedRequeues: requeues),
                                        retry: configuration, using: &random)
    }

    static func delay(_ action: RowAction) -> Duration? {
        guard case .retry(let after, _) = action else { return nil }
        return after
    }

    // MARK: meanings

    @Test func tableHoldsExactlyTheDocumentedReasons() {
        #expect(Set(APNsReason.allCases.map(\.rawValue)) == Set(Self.table.map(\.reason)))
        #expect(APNsReason.allCases.count == Self.table.count)
    }

    @Test(arguments: table.map { [$0.reason, String($0.status), $0.meaning.rawValue] })
    func everyReason(row: [String]) throws {
        let reason = try #require(APNsReason(rawValue: row[0]))
        let status = try #require(Int(row[1]))
        let meaning = try #require(AnswerMeaning(rawValue: row[2]))
        #expect(reason.status == status)
        #expect(Self.meaning(status, row[0]) == meaning)
    }

    @Test func reasonWinsOverADriftedStatus() {
        // Apple's 2023 table had ExpiredToken at 400.
        #expect(Self.meaning(400, "ExpiredToken") == .deadToken)
        #expect(Self.meaning(400, "Unregistered") == .deadToken)
    }

    @Test func successIsDeliveredWhateverTheBodySays() {
        #expect(Self.meaning(200, nil) == .delivered)
        #expect(Self.meaning(200, "BadDeviceToken") == .delivered)
    }

    @Test(arguments: [
        (500, AnswerMeaning.serverTrouble), (502, .serverTrouble), (503, .serverTrouble), (599, .serverTrouble),
        (429, .deviceThrottled), (403, .credentialsRefused), (410, .deadToken),
        (400, .rowRejected), (404, .rowRejected), (413, .rowRejected), (418, .rowRejected),
        (301, .serverTrouble), (100, .serverTrouble), (0, .serverTrouble), (-1, .serverTrouble),
        (600, .serverTrouble), (Int.max, .serverTrouble), (Int.min, .serverTrouble),
    ])
    func unknownReasonsFallBackToTheStatus(status: Int, meaning: AnswerMeaning) {
        #expect(Self.meaning(status, "SomethingNew") == meaning)
        #expect(Self.meaning(status, nil) == meaning)
        #expect(Self.meaning(status, "") == meaning)
    }

    @Test func anAnswerNeverClaimsTheRequestWentUnprocessed() {
        // Only the HTTP/2 layer knows a stream was never processed.
        let reasons: [String?] = [nil, "", "Nonsense"] + APNsReason.allCases.map(\.rawValue)
        for status in [0, 200, 400, 403, 410, 413, 429, 500, 503, 999] {
            for reason in reasons { #expect(Self.meaning(status, reason) != .notProcessed) }
        }
    }

    @Test func reasonsAreMatchedExactly() {
        #expect(Self.meaning(400, "baddevicetoken") == .rowRejected)
        #expect(Self.meaning(400, " BadDeviceToken") == .rowRejected)
    }

    @Test func aRowsOwnTopicOwnsItsTopicAnswers() {
        #expect(Self.meaning(400, "BadTopic", explicitTopic: true) == .rowRejected)
        #expect(Self.meaning(400, "TopicDisallowed", explicitTopic: true) == .rowRejected)
        #expect(Self.meaning(400, "TopicDisallowed", explicitTopic: false) == .topicRefused)
        // The topic was wrong, not the token: nothing is listed.
        #expect(Self.meaning(400, "DeviceTokenNotForTopic", explicitTopic: true) == .rowRejected)
        #expect(Self.meaning(400, "DeviceTokenNotForTopic", explicitTopic: false) == .deadToken)
        #expect(Self.meaning(400, "BadDeviceToken", explicitTopic: true) == .deadToken)
        #expect(Self.meaning(403, "InvalidProviderToken", explicitTopic: true) == .credentialsRefused)
    }

    @Test func noAnswerDependsOnWhetherAPNsMayHaveProcessedIt() {
        #expect(DeliveryPolicy.meaning(of: .unanswered(.notProcessed, goAwayReason: nil)) == .notProcessed)
        #expect(DeliveryPolicy.meaning(of: .unanswered(.mayHaveBeenProcessed, goAwayReason: nil)) == .serverTrouble)
        #expect(DeliveryPolicy.meaning(of: .unsendable) == .rowRejected)
        #expect(DeliveryPolicy.meaning(of: .unsignable) == .credentialsRefused)
    }

    @Test func aGoAwaysReasonCountsLikeAnAnswerForTheStreamsItLeft() {
        for reason in ["BadCertificateEnvironment", "InvalidProviderToken", "BadCertificate"] {
            #expect(DeliveryPolicy.meaning(of: .unanswered(.notProcessed, goAwayReason: reason)) == .credentialsRefused)
        }
        for reason in ["Shutdown", "IdleTimeout", "Unknown", ""] {
            #expect(DeliveryPolicy.meaning(of: .unanswered(.notProcessed, goAwayReason: reason)) == .notProcessed)
        }
    }

    // MARK: the client's steps

    @Test func clientResendsWhatAPNsNeverProcessedTwice() {
        var resends = ClientResends()
        let refused = APNsAnswer.unanswered(.notProcessed, goAwayReason: nil)
        #expect(DeliveryPolicy.clientStep(for: refused, after: resends) == .resendElsewhere)
        resends.notProcessed = 2
        #expect(DeliveryPolicy.clientStep(for: refused, after: resends) == .done)
        #expect(DeliveryPolicy.clientStep(for: .unanswered(.mayHaveBeenProcessed, goAwayReason: nil), after: ClientResends()) == .done)
        let environment = APNsAnswer.unanswered(.notProcessed, goAwayReason: "BadCertificateEnvironment")
        #expect(DeliveryPolicy.clientStep(for: environment, after: ClientResends()) == .done)
    }

    @Test func clientRenewsARefusedProviderTokenOnceAndReplacesAConnectionOnce() {
        var resends = ClientResends()
        let expired = APNsAnswer.answered(status: 403, reason: "ExpiredProviderToken")
        let updates = APNsAnswer.answered(status: 429, reason: "TooManyProviderTokenUpdates")
        #expect(DeliveryPolicy.clientStep(for: expired, after: resends) == .renewProviderTokenAndResend)
        #expect(DeliveryPolicy.clientStep(for: updates, after: resends) == .replaceConnectionAndResend)
        resends.renewedProviderToken = true
        resends.replacedConnection = true
        #expect(DeliveryPolicy.clientStep(for: expired, after: resends) == .done)
        #expect(DeliveryPolicy.clientStep(for: updates, after: resends) == .done)
        for (status, reason) in [(200, nil), (410, "Unregistered"), (500, nil), (403, "Forbidden")] as [(Int, String?)] {
            #expect(DeliveryPolicy.clientStep(for: .answered(status: status, reason: reason), after: ClientResends()) == .done)
        }
    }

    // MARK: the row

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
                let action = Self.action(.serverTrouble, attempts: attempts, seed: seed)
                let delay = try #require(Self.delay(action))
                #expect(delay >= .seconds(1) && delay <= .seconds(5))
                #expect(action == .retry(after: delay, counted: true))
            }
            #expect(Self.action(.serverTrouble, attempts: 4, seed: seed) == .fail(listsToken: false))
        }
    }

    @Test func serverTroubleDelaysAreSpreadOverTheRange() throws {
        let delays = try (UInt64(0)..<400).map { seed in
            try #require(Self.delay(Self.action(.serverTrouble, attempts: 1, seed: seed)))
        }
        #expect(delays.contains { $0 < .seconds(2) })
        #expect(delays.contains { $0 > .seconds(4) })
    }

    @Test func deviceThrottlingBacksOffExponentiallyWithEqualJitter() throws {
        // Steps 1, 2, 4, 8, 16, 32, 60 (capped) seconds; each delay lies in [step/2, step].
        let steps: [Int64] = [1, 2, 4, 8, 16, 32, 60]
        for seed in UInt64(0)..<200 {
            for (index, step) in steps.enumerated() {
                let delay = try #require(Self.delay(Self.action(.deviceThrottled, attempts: index + 1, seed: seed)))
                #expect(delay >= .seconds(step) / 2 && delay <= .seconds(step), "attempt \(index + 1)")
            }
            #expect(Self.action(.deviceThrottled, attempts: 8, seed: seed) == .fail(listsToken: false))
        }
    }

    @Test func hugeAttemptCountsDoNotOverflow() throws {
        let configuration = RetryConfiguration(tooManyRequestsMaximumAttempts: .max)
        for attempts in [62, 63, 64, 1000, Int.max - 1] {
            let delay = try #require(Self.delay(Self.action(.deviceThrottled, attempts: attempts, configuration: configuration)))
            #expect(delay >= .seconds(30) && delay <= .seconds(60))
        }
    }

    @Test func retrySettingsAreHonoured() throws {
        let configuration = RetryConfiguration(
            serverErrorRetries: 1, serverErrorDelay: .seconds(900) ... .seconds(900),
            tooManyRequestsBaseDelay: .milliseconds(100), tooManyRequestsMaximumDelay: .milliseconds(300),
            tooManyRequestsMaximumAttempts: 3)
        #expect(Self.action(.serverTrouble, attempts: 1, configuration: configuration) == .retry(after: .seconds(900), counted: true))
        #expect(Self.action(.serverTrouble, attempts: 2, configuration: configuration) == .fail(listsToken: false))
        let second = try #require(Self.delay(Self.action(.deviceThrottled, attempts: 2, configuration: configuration)))
        #expect(second >= .milliseconds(100) && second <= .milliseconds(200))
        #expect(Self.action(.deviceThrottled, attempts: 3, configuration: configuration) == .fail(listsToken: false))
    }

    @Test func unprocessedRequestsRequeueUncountedThenCountAsLostAnswers() throws {
        let first = try #require(Self.delay(Self.action(.notProcessed, attempts: 1)))
        #expect(DeliveryPolicy.requeueDelay.contains(first))
        #expect(Self.action(.notProcessed, attempts: 1, requeues: 4) == .retry(after: Self.delay(Self.action(.notProcessed, attempts: 1, requeues: 4))!, counted: false))
        let delay = try #require(Self.delay(Self.action(.notProcessed, attempts: 1, requeues: 5)))
        #expect(delay >= .seconds(1) && delay <= .seconds(5))
        #expect(Self.action(.notProcessed, attempts: 4, requeues: 5) == .fail(listsToken: false))
    }

    @Test func whatTheClientCouldNotMendPausesTheAppOrTheTopic() {
        #expect(Self.action(.providerTokenExpired, attempts: 1) == .pause(.app))
        #expect(Self.action(.providerTokenUpdatedTooOften, attempts: 1) == .pause(.app))
        #expect(Self.action(.credentialsRefused, attempts: 1) == .pause(.app))
        #expect(Self.action(.topicRefused, attempts: 1) == .pause(.topic))
    }

    @Test func finalActions() {
        #expect(Self.action(.delivered, attempts: 1) == .deliver)
        #expect(Self.action(.deadToken, attempts: 1) == .fail(listsToken: true))
        #expect(Self.action(.rowRejected, attempts: 1) == .fail(listsToken: false))
    }

    @Test(arguments: AnswerMeaning.allCases)
    func nonsenseInputsStillDecide(meaning: AnswerMeaning) {
        for attempts in [Int.min, -1, 0, 1, Int.max] {
            for requeues in [Int.min, -1, 0, Int.max] {
                _ = Self.action(meaning, attempts: attempts, requeues: requeues)
            }
        }
        let inverted = RetryConfiguration(
            serverErrorRetries: -5, serverErrorDelay: .seconds(-10) ... .seconds(-1),
            tooManyRequestsBaseDelay: .seconds(-1), tooManyRequestsMaximumDelay: .seconds(-5),
            tooManyRequestsMaximumAttempts: -1)
        _ = Self.action(meaning, attempts: 1, configuration: inverted)
    }

    @Test func localValidationReasonsShareAPNsSpellingsWhereTheyOverlap() {
        let apns = Set(APNsReason.allCases.map(\.rawValue))
        let shared: [ValidationFailure.Reason] = [
            .invalidPushType, .badDeviceToken, .badPriority, .missingTopic, .badTopic, .payloadTooLarge,
            .badCollapseID, .badExpirationDate,
        ]
        for reason in shared { #expect(apns.contains(reason.rawValue)) }
    }
}
