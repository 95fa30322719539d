import Testing
@testable import PGPushCore

struct ReasonCatalogueTests {
    /// apns-reference §4, Apple's `/3/device` table, with the class SPEC §4 gives each.
    static let table: [(reason: String, status: Int, outcome: OutcomeClass)] = [
        ("BadCollapseId", 400, .permanentFailure),
        ("BadDeviceToken", 400, .tokenInvalid),
        ("BadExpirationDate", 400, .permanentFailure),
        ("BadMessageId", 400, .permanentFailure),
        ("BadPriority", 400, .permanentFailure),
        ("BadTopic", 400, .appMisconfigured),
        ("DeviceTokenNotForTopic", 400, .tokenInvalid),
        ("DuplicateHeaders", 400, .permanentFailure),
        ("IdleTimeout", 400, .retryServerError),
        ("InvalidPushType", 400, .permanentFailure),
        ("MissingDeviceToken", 400, .permanentFailure),
        ("MissingTopic", 400, .appMisconfigured),
        ("PayloadEmpty", 400, .permanentFailure),
        ("TopicDisallowed", 400, .appMisconfigured),
        ("BadCertificate", 403, .appMisconfigured),
        ("BadCertificateEnvironment", 403, .appMisconfigured),
        ("ExpiredProviderToken", 403, .refreshProviderToken),
        ("Forbidden", 403, .appMisconfigured),
        ("InvalidProviderToken", 403, .appMisconfigured),
        ("MissingProviderToken", 403, .appMisconfigured),
        ("UnrelatedKeyIdInToken", 403, .appMisconfigured),
        ("BadEnvironmentKeyIdInToken", 403, .appMisconfigured),
        ("BadEnvironmentKeyInToken", 403, .appMisconfigured),
        ("BadPath", 404, .permanentFailure),
        ("MethodNotAllowed", 405, .permanentFailure),
        ("ExpiredToken", 410, .tokenInvalid),
        ("Unregistered", 410, .tokenInvalid),
        ("PayloadTooLarge", 413, .permanentFailure),
        ("TooManyProviderTokenUpdates", 429, .signingBug),
        ("TooManyRequests", 429, .backOffTooManyRequests),
        ("InternalServerError", 500, .retryServerError),
        ("ServiceUnavailable", 503, .retryServerError),
        ("Shutdown", 503, .retryServerError),
    ]

    @Test func catalogueHoldsExactlyTheDocumentedReasons() {
        #expect(Set(APNsReason.allCases.map(\.rawValue)) == Set(Self.table.map(\.reason)))
        #expect(APNsReason.allCases.count == Self.table.count)
    }

    @Test(arguments: table.map { [$0.reason, String($0.status), $0.outcome.rawValue] })
    func everyReason(row: [String]) throws {
        let reason = try #require(APNsReason(rawValue: row[0]))
        let status = try #require(Int(row[1]))
        let outcome = try #require(OutcomeClass(rawValue: row[2]))
        #expect(reason.status == status)
        #expect(reason.outcome == outcome)
        #expect(ReasonCatalogue.classify(status: status, reason: row[0]) == outcome)
    }

    @Test func reasonWinsOverADriftedStatus() {
        // Apple's 2023 table had ExpiredToken at 400.
        #expect(ReasonCatalogue.classify(status: 400, reason: "ExpiredToken") == .tokenInvalid)
        #expect(ReasonCatalogue.classify(status: 400, reason: "Unregistered") == .tokenInvalid)
    }

    @Test func successIsDeliveredWhateverTheBodySays() {
        #expect(ReasonCatalogue.classify(status: 200, reason: nil) == .delivered)
        #expect(ReasonCatalogue.classify(status: 200, reason: "BadDeviceToken") == .delivered)
    }

    @Test func noResponseIsRetried() {
        #expect(ReasonCatalogue.classify(status: nil, reason: nil) == .retryServerError)
        #expect(ReasonCatalogue.classify(status: nil, reason: "Shutdown") == .retryServerError)
    }

    @Test(arguments: [
        (500, OutcomeClass.retryServerError), (502, .retryServerError), (503, .retryServerError), (599, .retryServerError),
        (429, .backOffTooManyRequests), (403, .appMisconfigured), (410, .tokenInvalid),
        (400, .permanentFailure), (404, .permanentFailure), (413, .permanentFailure), (418, .permanentFailure),
        (301, .retryServerError), (100, .retryServerError), (0, .retryServerError), (-1, .retryServerError),
        (600, .retryServerError), (Int.max, .retryServerError), (Int.min, .retryServerError),
    ])
    func unknownReasonsFallBackToTheStatus(status: Int, outcome: OutcomeClass) {
        #expect(ReasonCatalogue.classify(status: status, reason: "SomethingNew") == outcome)
        #expect(ReasonCatalogue.classify(status: status, reason: nil) == outcome)
        #expect(ReasonCatalogue.classify(status: status, reason: "") == outcome)
    }

    @Test func aStatusNeverClaimsTheRequestWentUnprocessed() {
        // Only the HTTP/2 layer knows a stream was never processed.
        let reasons: [String?] = [nil, "", "Nonsense"] + APNsReason.allCases.map(\.rawValue)
        for status in [nil, 0, 200, 400, 403, 410, 413, 429, 500, 503, 999] as [Int?] {
            for reason in reasons {
                #expect(ReasonCatalogue.classify(status: status, reason: reason) != .notProcessed)
            }
        }
    }

    @Test func reasonsAreMatchedExactly() {
        #expect(ReasonCatalogue.classify(status: 400, reason: "baddevicetoken") == .permanentFailure)
        #expect(ReasonCatalogue.classify(status: 400, reason: " BadDeviceToken") == .permanentFailure)
    }

    @Test func explicitTopicMakesTopicErrorsTheRowsFault() {
        #expect(ReasonCatalogue.classify(status: 400, reason: "BadTopic", topicWasExplicit: true) == .permanentFailure)
        #expect(ReasonCatalogue.classify(status: 400, reason: "TopicDisallowed", topicWasExplicit: true) == .permanentFailure)
        #expect(ReasonCatalogue.classify(status: 400, reason: "BadTopic", topicWasExplicit: false) == .appMisconfigured)
        #expect(ReasonCatalogue.classify(status: 400, reason: "BadDeviceToken", topicWasExplicit: true) == .tokenInvalid)
        #expect(ReasonCatalogue.classify(status: 403, reason: "InvalidProviderToken", topicWasExplicit: true) == .appMisconfigured)
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
