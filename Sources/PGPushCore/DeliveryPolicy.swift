/// Whether APNs may have acted on a request that got no answer. The one vocabulary
/// for it from the transport up: a request that was `notProcessed` can be sent again
/// without any risk of a duplicate; one that `mayHaveBeenProcessed` cannot.
public enum Processing: String, Sendable, Equatable {
    /// Never written, refused (REFUSED_STREAM), above a GOAWAY's last stream id, or no connection.
    case notProcessed
    /// Written but not answered (deadline, connection lost): it may have been delivered.
    case mayHaveBeenProcessed
}

/// What came back for one request, in the words the policy decides on.
public enum APNsAnswer: Equatable, Sendable {
    /// An HTTP answer with the `reason` of its JSON body, if any.
    case answered(status: Int, reason: String?)
    /// No answer. `goAwayReason` is the `reason` of the GOAWAY that ended the
    /// connection, when APNs put one in its debug data.
    case unanswered(Processing, goAwayReason: String?)
    /// The transport refused to encode the request: sending it again cannot help.
    case unsendable
    /// No provider token could be signed: the app's key is unusable.
    case unsignable
}

/// What an answer means, whatever status carried it.
public enum AnswerMeaning: String, CaseIterable, Sendable {
    /// 2xx: APNs accepted the notification.
    case delivered
    /// 5xx, or no answer to a request APNs may have processed: retry a few times, soon.
    case serverTrouble
    /// The request certainly never reached APNs: send it again, not counted.
    case notProcessed
    /// 429 TooManyRequests: this device is pushed to too often; back off exponentially.
    case deviceThrottled
    /// 403 ExpiredProviderToken: the JWT is refused; every request carrying it will be.
    case providerTokenExpired
    /// 429 TooManyProviderTokenUpdates: a connection saw a second JWT too soon.
    case providerTokenUpdatedTooOften
    /// The device token is dead or belongs to another app: fail and list the token.
    case deadToken
    /// The app may not send to this topic: pause that topic, keep its rows queued.
    case topicRefused
    /// The key, certificate or environment is wrong for the whole app: pause the app.
    case credentialsRefused
    /// The broadcast's channel is gone or unusable (unknown or deleted channel, malformed
    /// id, broadcast not enabled for the app): fail it and mark the channel.
    case channelRefused
    /// This notification can never succeed as it is: fail it, list nothing.
    case rowRejected
}

/// What the APNs client does before handing a result to the worker.
public enum ClientStep: Equatable, Sendable {
    /// Return the result.
    case done
    /// Send again on another connection, not counted (the request was not processed).
    case resendElsewhere
    /// Sign a new JWT, retire every connection that carried the refused one, send again.
    case renewProviderTokenAndResend
    /// Close the connection that refused the JWT and send again on a fresh one.
    case replaceConnectionAndResend
}

/// The resends the client already made for one request.
public struct ClientResends: Equatable, Sendable {
    public var notProcessed = 0
    public var renewedProviderToken = false
    public var replacedConnection = false

    public init() {}

    public var total: Int { notProcessed + (renewedProviderToken ? 1 : 0) + (replacedConnection ? 1 : 0) }
}

/// What the worker does with the row.
public enum RowAction: Equatable, Sendable {
    /// Mark it `delivered`.
    case deliver
    /// Back to `queued`, due after the delay; `counted` keeps the claim's attempt.
    case retry(after: Duration, counted: Bool)
    /// Back to `queued`, not counted, and pause the scope (the whole app, or the row's
    /// topic) with back-off: the fault is not the row's, so it is not burned.
    case pause(PauseScope)
    /// Mark it `failed`; `listsToken` also records the token in `invalid_tokens`, or for a
    /// broadcast marks the channel in `channels`.
    case fail(listsToken: Bool)
}

public enum PauseScope: String, Equatable, Sendable {
    case app
    case topic
}

/// The row's history the decision needs.
public struct RowHistory: Equatable, Sendable {
    /// Counted attempts so far, including the one just answered.
    public var attempts: Int
    /// Times the row already went back to the queue uncounted because it was not processed.
    public var uncountedRequeues: Int
    /// The row named its own `topic`: a topic answer is then the row's fault.
    public var topicWasExplicit: Bool

    public init(attempts: Int, uncountedRequeues: Int = 0, topicWasExplicit: Bool = false) {
        self.attempts = attempts
        self.uncountedRequeues = uncountedRequeues
        self.topicWasExplicit = topicWasExplicit
    }
}

/// Every decision after an APNs answer, in one place: what the answer means, what the
/// client does at once, what becomes of the row. The README's answer table is this file.
///
/// | answer | meaning | client | row |
/// |---|---|---|---|
/// | 2xx | delivered | | `delivered` |
/// | 5xx, IdleTimeout, no answer after writing | serverTrouble | | retry, 1–5 s, 3 times, then `failed` |
/// | refused stream, above GOAWAY's last stream, never written | notProcessed | resend elsewhere (twice) | requeue uncounted (5 times), then as serverTrouble |
/// | 429 TooManyRequests | deviceThrottled | | retry with exponential back-off, 8 attempts |
/// | 403 ExpiredProviderToken | providerTokenExpired | renew the JWT once, retire its connections, resend | pause the app: a fresh JWT was refused too |
/// | 429 TooManyProviderTokenUpdates | providerTokenUpdatedTooOften | replace the connection once, resend | pause the app |
/// | 410 Unregistered/ExpiredToken, 400 BadDeviceToken/DeviceTokenNotForTopic | deadToken | | `failed`, token listed |
/// | 400 TopicDisallowed/BadTopic | topicRefused | | pause the topic |
/// | other 403s, MissingTopic, a GOAWAY with such a reason | credentialsRefused | | pause the app |
/// | 400 ChannelNotRegistered/BadChannelId/MissingChannelId/FeatureNotEnabled | channelRefused | | `failed`, channel marked |
/// | Forbidden, other 4xx, a topic answer on a row's own topic | rowRejected | | `failed` |
///
/// Choices worth knowing:
/// - A known reason decides whatever the status (statuses have drifted: ExpiredToken was
///   400, is 410). An unknown reason falls back to the status: 403 credentials, 410 dead
///   token, 429 throttled, other 4xx rejected, 5xx and statuses APNs never uses (a proxy in
///   the way) server trouble.
/// - `Forbidden` fails the row: Apple's guidance is never to retry it.
/// - A row that named its own topic owns its topic answers: `TopicDisallowed`, `BadTopic`
///   fail that row alone, and `DeviceTokenNotForTopic` says the topic is wrong, not the
///   token, so the token is not listed.
/// - A broadcast refused for its channel's sake fails only that row: the channel is marked
///   with the reason in `pgpush.channels`, and other channels and device pushes go on.
///   FeatureNotEnabled too, though it concerns the app: pausing the app would hold its
///   device pushes, which need no broadcast capability.
/// - A GOAWAY's reason counts like an answer for the streams it left unprocessed: a
///   credential or environment reason pauses the app instead of resending into the same
///   refusal; `Shutdown` and the like are resent elsewhere.
public enum DeliveryPolicy {
    /// An uncounted requeue after an unprocessed request comes back this soon, spread a little.
    public static let requeueDelay: ClosedRange<Duration> = .milliseconds(50) ... .milliseconds(500)
    /// A paused row's next chance; the scope's own back-off decides when it is really sent.
    public static let pausedRowDelay: Duration = .seconds(5)
    /// The client's own resends of a request APNs did not process.
    public static let clientNotProcessedResends = 2

    // MARK: meaning

    public static func meaning(of answer: APNsAnswer, topicWasExplicit: Bool = false) -> AnswerMeaning {
        switch answer {
        case .unsendable: return .rowRejected
        case .unsignable: return .credentialsRefused
        case .unanswered(let processing, let goAwayReason):
            if let goAwayReason, let reason = APNsReason(rawValue: goAwayReason) {
                let said = meaning(of: reason, topicWasExplicit: topicWasExplicit)
                if said == .credentialsRefused || said == .topicRefused { return said }
            }
            return processing == .notProcessed ? .notProcessed : .serverTrouble
        case .answered(let status, let reason):
            if (200..<300).contains(status) { return .delivered }
            if let reason, let known = APNsReason(rawValue: reason) {
                return meaning(of: known, topicWasExplicit: topicWasExplicit)
            }
            switch status {
            case 429: return .deviceThrottled
            case 403: return .credentialsRefused
            case 410: return .deadToken
            case 400..<500: return .rowRejected
            default: return .serverTrouble
            }
        }
    }

    /// Apple's reasons, row by row.
    static func meaning(of reason: APNsReason, topicWasExplicit: Bool) -> AnswerMeaning {
        switch reason {
        case .unregistered, .expiredToken, .badDeviceToken:
            return .deadToken
        case .deviceTokenNotForTopic:
            return topicWasExplicit ? .rowRejected : .deadToken
        case .topicDisallowed, .badTopic:
            return topicWasExplicit ? .rowRejected : .topicRefused
        case .invalidProviderToken, .missingProviderToken, .badCertificate, .badCertificateEnvironment,
             .unrelatedKeyIDInToken, .badEnvironmentKeyIDInToken, .badEnvironmentKeyInToken, .missingTopic, .topicMismatch:
            return .credentialsRefused
        case .expiredProviderToken: return .providerTokenExpired
        case .tooManyProviderTokenUpdates: return .providerTokenUpdatedTooOften
        case .tooManyRequests: return .deviceThrottled
        case .internalServerError, .serviceUnavailable, .shutdown, .idleTimeout: return .serverTrouble
        case .channelNotRegistered, .badChannelID, .missingChannelID, .featureNotEnabled: return .channelRefused
        case .badRequestParams, .badRequestPayload, .missingPushType, .cannotCreateChannelConfig: return .rowRejected
        case .forbidden, .badCollapseID, .badExpirationDate, .badMessageID, .badPriority, .duplicateHeaders,
             .invalidPushType, .missingDeviceToken, .payloadEmpty, .badPath, .methodNotAllowed, .payloadTooLarge:
            return .rowRejected
        }
    }

    // MARK: the client's step

    /// What the client does at once with an answer, given the resends it already made.
    /// Each kind of resend happens a bounded number of times; the rest is the worker's.
    public static func clientStep(for answer: APNsAnswer, after resends: ClientResends) -> ClientStep {
        switch meaning(of: answer) {
        case .notProcessed:
            return resends.notProcessed < clientNotProcessedResends ? .resendElsewhere : .done
        case .providerTokenExpired:
            return resends.renewedProviderToken ? .done : .renewProviderTokenAndResend
        case .providerTokenUpdatedTooOften:
            return resends.replacedConnection ? .done : .replaceConnectionAndResend
        default:
            return .done
        }
    }

    // MARK: the row

    /// What becomes of the row. Pure: the same inputs and random numbers give the same action.
    public static func rowAction(for meaning: AnswerMeaning, history: RowHistory,
                                 retry configuration: RetryConfiguration = .default,
                                 using random: inout some RandomNumberGenerator) -> RowAction {
        let attempts = max(history.attempts, 1)
        switch meaning {
        case .delivered:
            return .deliver
        case .serverTrouble:
            guard attempts <= configuration.serverErrorRetries else { return .fail(listsToken: false) }
            return .retry(after: randomDuration(in: configuration.serverErrorDelay, using: &random), counted: true)
        case .deviceThrottled:
            guard attempts < configuration.tooManyRequestsMaximumAttempts else { return .fail(listsToken: false) }
            return .retry(after: backoff(attempt: attempts, configuration: configuration, using: &random), counted: true)
        case .notProcessed:
            // A server that refuses every stream must not keep a row in flight for ever:
            // past the cap, the requeue counts like a lost answer.
            guard history.uncountedRequeues < configuration.notProcessedRequeues else {
                return rowAction(for: .serverTrouble, history: history, retry: configuration, using: &random)
            }
            return .retry(after: randomDuration(in: requeueDelay, using: &random), counted: false)
        case .providerTokenExpired, .providerTokenUpdatedTooOften, .credentialsRefused:
            // The client's own remedy did not help (a JWT refused right after signing
            // points at the clock or a revoked key): the app's credentials are the problem.
            return .pause(.app)
        case .topicRefused:
            return .pause(.topic)
        case .deadToken, .channelRefused:
            return .fail(listsToken: true)
        case .rowRejected:
            return .fail(listsToken: false)
        }
    }

    /// Exponential step `base · 2^(attempt-1)`, capped, with equal jitter: half the
    /// step fixed, half uniformly random, so a retry never comes at once yet spreads out.
    static func backoff(attempt: Int, configuration: RetryConfiguration, using random: inout some RandomNumberGenerator) -> Duration {
        let base = max(nanoseconds(configuration.tooManyRequestsBaseDelay), 0)
        let cap = max(nanoseconds(configuration.tooManyRequestsMaximumDelay), 0)
        let doublings = attempt - 1
        var step = cap
        if doublings < 62 {
            let (scaled, overflow) = base.multipliedReportingOverflow(by: Int64(1) << doublings)
            if !overflow { step = min(scaled, cap) }
        }
        let half = step / 2
        return .nanoseconds(half + Int64.random(in: 0...(step - half), using: &random))
    }

    static func randomDuration(in range: ClosedRange<Duration>, using random: inout some RandomNumberGenerator) -> Duration {
        let lower = max(nanoseconds(range.lowerBound), 0)
        let upper = max(nanoseconds(range.upperBound), lower)
        return .nanoseconds(Int64.random(in: lower...upper, using: &random))
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? Int64.min / 2 : Int64.max / 2 }
        return whole + attoseconds / 1_000_000_000
    }
}
