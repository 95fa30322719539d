@testable import APNsClient
import APNsCore
import PGPushCore
import Testing

/// `DeliveryPolicy` row by row: Apple's reasons, the status fallback and the client's steps.
/// When a retried row is due again is `RetryRulesTests`'.
struct DeliveryPolicyTests {
    /// A verdict's kind, for tables.
    enum Kind: String, CaseIterable {
        case delivered, notProcessed, serverTrouble, throttled, failed, failedListed, pausedApp, pausedTopic
    }

    static func kind(_ verdict: Verdict) -> Kind {
        switch verdict {
        case .delivered: .delivered
        case .notProcessed: .notProcessed
        case .serverTrouble: .serverTrouble
        case .throttled: .throttled
        case .failed(let listed): listed ? .failedListed : .failed
        case .paused(.service, _): .pausedApp
        case .paused(.requestScope, _): .pausedTopic
        }
    }

    /// Apple's `/3/device`, broadcast and channel management reasons with the status Apple
    /// lists and the meaning pgpush gives each.
    static let table: [(reason: String, status: Int, meaning: Kind)] = [
        ("BadCollapseId", 400, .failed),
        ("BadDeviceToken", 400, .failedListed),
        ("BadExpirationDate", 400, .failed),
        ("BadMessageId", 400, .failed),
        ("BadPriority", 400, .failed),
        ("BadTopic", 400, .pausedTopic),
        ("DeviceTokenNotForTopic", 400, .failedListed),
        ("DuplicateHeaders", 400, .failed),
        ("IdleTimeout", 400, .serverTrouble),
        ("InvalidPushType", 400, .failed),
        ("MissingDeviceToken", 400, .failed),
        ("MissingTopic", 400, .pausedApp),
        ("PayloadEmpty", 400, .failed),
        ("TopicDisallowed", 400, .pausedTopic),
        ("BadCertificate", 403, .pausedApp),
        ("BadCertificateEnvironment", 403, .pausedApp),
        ("ExpiredProviderToken", 403, .pausedApp),
        ("Forbidden", 403, .failed),
        ("InvalidProviderToken", 403, .pausedApp),
        ("MissingProviderToken", 403, .pausedApp),
        ("UnrelatedKeyIdInToken", 403, .pausedApp),
        ("BadEnvironmentKeyIdInToken", 403, .pausedApp),
        ("BadEnvironmentKeyInToken", 403, .pausedApp),
        ("BadPath", 404, .failed),
        ("MethodNotAllowed", 405, .failed),
        ("ExpiredToken", 410, .failedListed),
        ("Unregistered", 410, .failedListed),
        ("PayloadTooLarge", 413, .failed),
        ("TooManyProviderTokenUpdates", 429, .pausedApp),
        ("TooManyRequests", 429, .throttled),
        ("InternalServerError", 500, .serverTrouble),
        ("ServiceUnavailable", 503, .serverTrouble),
        ("Shutdown", 503, .serverTrouble),
        ("FeatureNotEnabled", 400, .failedListed),
        ("MissingChannelId", 400, .failedListed),
        ("BadChannelId", 400, .failedListed),
        ("ChannelNotRegistered", 400, .failedListed),
        ("BadRequestParams", 400, .failed),
        ("BadRequestPayload", 400, .failed),
        ("MissingPushType", 400, .failed),
        ("CannotCreateChannelConfig", 400, .failed),
        ("TopicMismatch", 403, .pausedApp),
    ]

    static func meaning(_ status: Int, _ reason: String?, explicitTopic: Bool = false) -> Kind {
        kind(DeliveryPolicy.verdict(status: status, reason: reason, topicIsExplicit: explicitTopic))
    }

    static func unanswered(_ processing: Processing, goAwayReason: String? = nil,
                           cause: DeliveryFailure.Cause = .goAway) -> Delivery {
        DeliveryPolicy.delivery(failure: DeliveryFailure(processing: processing, cause: cause, serviceReason: goAwayReason,
                                                         detail: "test"), topicIsExplicit: false)
    }

    static func answered(_ status: Int, _ reason: String?) -> Delivery {
        DeliveryPolicy.delivery(status: status, body: reason.map { APNsErrorBody(reason: $0, timestamp: nil) }, uniqueID: nil,
                                topicIsExplicit: false)
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
        let meaning = try #require(Kind(rawValue: row[2]))
        #expect(reason.status == status)
        #expect(Self.meaning(status, row[0]) == meaning)
    }

    @Test func reasonWinsOverADriftedStatus() {
        // Apple's 2023 table had ExpiredToken at 400.
        #expect(Self.meaning(400, "ExpiredToken") == .failedListed)
        #expect(Self.meaning(400, "Unregistered") == .failedListed)
    }

    @Test func successIsDeliveredWhateverTheBodySays() {
        #expect(Self.meaning(200, nil) == .delivered)
        #expect(Self.meaning(200, "BadDeviceToken") == .delivered)
    }

    @Test(arguments: [
        (500, Kind.serverTrouble), (502, .serverTrouble), (503, .serverTrouble), (599, .serverTrouble),
        (429, .throttled), (403, .pausedApp), (410, .failedListed),
        (400, .failed), (404, .failed), (413, .failed), (418, .failed),
        (301, .serverTrouble), (100, .serverTrouble), (0, .serverTrouble), (-1, .serverTrouble),
        (600, .serverTrouble), (Int.max, .serverTrouble), (Int.min, .serverTrouble),
    ])
    func unknownReasonsFallBackToTheStatus(status: Int, meaning: Kind) {
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
        #expect(Self.meaning(400, "baddevicetoken") == .failed)
        #expect(Self.meaning(400, " BadDeviceToken") == .failed)
    }

    @Test func aRowsOwnTopicOwnsItsTopicAnswers() {
        #expect(Self.meaning(400, "BadTopic", explicitTopic: true) == .failed)
        #expect(Self.meaning(400, "TopicDisallowed", explicitTopic: true) == .failed)
        #expect(Self.meaning(400, "TopicDisallowed", explicitTopic: false) == .pausedTopic)
        // The topic was wrong, not the token: nothing is listed.
        #expect(Self.meaning(400, "DeviceTokenNotForTopic", explicitTopic: true) == .failed)
        #expect(Self.meaning(400, "DeviceTokenNotForTopic", explicitTopic: false) == .failedListed)
        #expect(Self.meaning(400, "BadDeviceToken", explicitTopic: true) == .failedListed)
        #expect(Self.meaning(403, "InvalidProviderToken", explicitTopic: true) == .pausedApp)
    }

    @Test func noAnswerDependsOnWhetherAPNsMayHaveProcessedIt() {
        #expect(Self.kind(Self.unanswered(.notProcessed).verdict) == .notProcessed)
        #expect(Self.kind(Self.unanswered(.mayHaveBeenProcessed, cause: .deadlineExceeded).verdict) == .serverTrouble)
        #expect(Self.kind(Self.unanswered(.notProcessed, cause: .invalidRequest).verdict) == .failed)
        #expect(Self.kind(Self.unanswered(.notProcessed, cause: .credentials).verdict) == .pausedApp)
    }

    @Test func aGoAwaysReasonCountsLikeAnAnswerForTheStreamsItLeft() {
        for reason in ["BadCertificateEnvironment", "InvalidProviderToken", "BadCertificate"] {
            #expect(Self.kind(Self.unanswered(.notProcessed, goAwayReason: reason).verdict) == .pausedApp)
        }
        for reason in ["Shutdown", "IdleTimeout", "Unknown", ""] {
            #expect(Self.kind(Self.unanswered(.notProcessed, goAwayReason: reason).verdict) == .notProcessed)
        }
    }

    // MARK: the client's steps

    @Test func clientResendsWhatAPNsNeverProcessedTwice() {
        var resends = ClientResends()
        let refused = Self.unanswered(.notProcessed)
        #expect(DeliveryPolicy.clientStep(for: refused, after: resends) == .resendElsewhere)
        resends.notProcessed = 2
        #expect(DeliveryPolicy.clientStep(for: refused, after: resends) == .done)
        #expect(DeliveryPolicy.clientStep(for: Self.unanswered(.mayHaveBeenProcessed, cause: .connectionLost),
                                          after: ClientResends()) == .done)
        let environment = Self.unanswered(.notProcessed, goAwayReason: "BadCertificateEnvironment")
        #expect(DeliveryPolicy.clientStep(for: environment, after: ClientResends()) == .done)
    }

    @Test func clientRenewsARefusedProviderTokenOnceAndReplacesAConnectionOnce() {
        var resends = ClientResends()
        let expired = Self.answered(403, "ExpiredProviderToken")
        let updates = Self.answered(429, "TooManyProviderTokenUpdates")
        #expect(DeliveryPolicy.clientStep(for: expired, after: resends) == .renewProviderTokenAndResend)
        #expect(DeliveryPolicy.clientStep(for: updates, after: resends) == .replaceConnectionAndResend)
        resends.renewedProviderToken = true
        resends.replacedConnection = true
        #expect(DeliveryPolicy.clientStep(for: expired, after: resends) == .done)
        #expect(DeliveryPolicy.clientStep(for: updates, after: resends) == .done)
        for (status, reason) in [(200, nil), (410, "Unregistered"), (500, nil), (403, "Forbidden")] as [(Int, String?)] {
            #expect(DeliveryPolicy.clientStep(for: Self.answered(status, reason), after: ClientResends()) == .done)
        }
    }

    @Test func aGoAwayWithAProviderTokenReasonIsResentNotPaused() {
        // The connection carried the old token; another connection carries the new one.
        #expect(Self.kind(Self.unanswered(.notProcessed, goAwayReason: "ExpiredProviderToken").verdict) == .notProcessed)
    }

    @Test func badDeviceTokenHintsAtTheOtherEnvironmentAndAnAnswerProvesTheCredentials() {
        #expect(Self.answered(400, "BadDeviceToken").hintsWrongSetup == true)
        #expect(Self.answered(410, "Unregistered").hintsWrongSetup == false)
        #expect(Self.unanswered(.notProcessed).hintsWrongSetup == nil)
        #expect(Self.answered(200, nil).provesCredentials)
        #expect(Self.answered(410, "Unregistered").provesCredentials)
        #expect(!Self.answered(500, nil).provesCredentials)
        #expect(!Self.unanswered(.mayHaveBeenProcessed, cause: .deadlineExceeded).provesCredentials)
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
