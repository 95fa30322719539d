import APNsCore
import Foundation
import PGPushCore

/// What the APNs client does before handing a result to the worker.
enum ClientStep: Equatable, Sendable {
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
struct ClientResends: Equatable, Sendable {
    var notProcessed = 0
    var renewedProviderToken = false
    var replacedConnection = false

    var total: Int { notProcessed + (renewedProviderToken ? 1 : 0) + (replacedConnection ? 1 : 0) }
}

/// What every APNs answer means, in one place: the verdict for the row and what the client
/// does at once. The README's answer table is this file; when a retried row is due again is
/// the shared `RetryRules`'.
///
/// | answer | verdict | client |
/// |---|---|---|
/// | 2xx | delivered | |
/// | 5xx, IdleTimeout, no answer after writing | serverTrouble | |
/// | refused stream, above GOAWAY's last stream, never written | notProcessed | resend elsewhere (twice) |
/// | 429 TooManyRequests | throttled (this device) | |
/// | 403 ExpiredProviderToken | pause the app | renew the JWT once, retire its connections, resend |
/// | 429 TooManyProviderTokenUpdates | pause the app | replace the connection once, resend |
/// | 410 Unregistered/ExpiredToken, 400 BadDeviceToken/DeviceTokenNotForTopic | failed, token listed | |
/// | 400 TopicDisallowed/BadTopic | pause the topic | |
/// | other 403s, MissingTopic, a GOAWAY with such a reason | pause the app | |
/// | 400 ChannelNotRegistered/BadChannelId/MissingChannelId/FeatureNotEnabled | failed, channel marked | |
/// | Forbidden, other 4xx, a topic answer on a row's own topic | failed | |
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
/// - BadDeviceToken hints at a wrong setup: when it is most of an app's recent answers, the
///   tokens likely belong to the other APNs environment.
package enum DeliveryPolicy {
    /// The client's own resends of a request APNs did not process.
    static let clientNotProcessedResends = 2

    // MARK: the verdict

    /// The delivery an HTTP answer makes: its verdict and what the row records of it.
    package static func delivery(status: Int, body: APNsErrorBody?, uniqueID: UUID?, topicIsExplicit: Bool) -> Delivery {
        let success = (200..<300).contains(status)
        let reason = success ? nil : body?.reason
        return Delivery(verdict: verdict(status: status, reason: body?.reason, topicIsExplicit: topicIsExplicit),
                        status: status, reason: reason, apnsUniqueID: uniqueID,
                        targetInvalidSince: body?.timestamp, provesCredentials: (200..<500).contains(status),
                        hintsWrongSetup: body?.reason == APNsReason.badDeviceToken.rawValue)
    }

    /// The delivery of a request that got no answer.
    package static func delivery(failure: DeliveryFailure, topicIsExplicit: Bool) -> Delivery {
        Delivery(verdict: verdict(failure: failure, topicIsExplicit: topicIsExplicit), reason: failure.reasonText,
                 failure: failure)
    }

    /// The verdict on an answer, `reason` the `reason` of its JSON body.
    package static func verdict(status: Int, reason: String?, topicIsExplicit: Bool = false) -> Verdict {
        if (200..<300).contains(status) { return .delivered }
        if let reason, let known = APNsReason(rawValue: reason) {
            return verdict(of: known, topicIsExplicit: topicIsExplicit)
        }
        let said = reason ?? "HTTP\(status)"
        switch status {
        case 429: return .throttled(retryAfter: nil, from: nil)
        case 403: return .paused(.service, reason: said)
        case 410: return .failed(listsTarget: true)
        case 400..<500: return .failed(listsTarget: false)
        default: return .serverTrouble(notBefore: nil)
        }
    }

    /// The verdict on no answer.
    package static func verdict(failure: DeliveryFailure, topicIsExplicit: Bool = false) -> Verdict {
        if failure.cause == .credentials { return .paused(.service, reason: pauseReason(failure.reasonText)) }
        if let goAwayReason = failure.serviceReason, let reason = APNsReason(rawValue: goAwayReason) {
            let said = verdict(of: reason, topicIsExplicit: topicIsExplicit)
            if case .paused = said, reason != .expiredProviderToken, reason != .tooManyProviderTokenUpdates { return said }
        }
        return .noAnswer(failure)
    }

    /// Apple's reasons, row by row.
    static func verdict(of reason: APNsReason, topicIsExplicit: Bool) -> Verdict {
        let paused = { (scope: PauseScope) in Verdict.paused(scope, reason: pauseReason(reason.rawValue)) }
        switch reason {
        case .unregistered, .expiredToken, .badDeviceToken:
            return .failed(listsTarget: true)
        case .deviceTokenNotForTopic:
            return .failed(listsTarget: !topicIsExplicit)
        case .topicDisallowed, .badTopic:
            return topicIsExplicit ? .failed(listsTarget: false) : paused(.requestScope)
        case .invalidProviderToken, .missingProviderToken, .badCertificate, .badCertificateEnvironment,
             .unrelatedKeyIDInToken, .badEnvironmentKeyIDInToken, .badEnvironmentKeyInToken, .missingTopic, .topicMismatch,
             .expiredProviderToken, .tooManyProviderTokenUpdates:
            // The last two reach the row only when the client's own remedy did not help (a
            // JWT refused right after signing points at the clock or a revoked key).
            return paused(.service)
        case .tooManyRequests: return .throttled(retryAfter: nil, from: nil)
        case .internalServerError, .serviceUnavailable, .shutdown, .idleTimeout: return .serverTrouble(notBefore: nil)
        case .channelNotRegistered, .badChannelID, .missingChannelID, .featureNotEnabled: return .failed(listsTarget: true)
        case .badRequestParams, .badRequestPayload, .missingPushType, .cannotCreateChannelConfig: return .failed(listsTarget: false)
        case .forbidden, .badCollapseID, .badExpirationDate, .badMessageID, .badPriority, .duplicateHeaders,
             .invalidPushType, .missingDeviceToken, .payloadEmpty, .badPath, .methodNotAllowed, .payloadTooLarge:
            return .failed(listsTarget: false)
        }
    }

    /// The reason `app_health` shows for a pause: what to check, not only what APNs said.
    static func pauseReason(_ said: String) -> String {
        switch said {
        case APNsReason.expiredProviderToken.rawValue:
            return "\(said): APNs refused a provider token signed moments before; check this machine's clock (NTP) "
                + "and that the signing key is not revoked"
        case APNsReason.tooManyProviderTokenUpdates.rawValue:
            return "\(said): APNs refused a renewed provider token on a fresh connection"
        default:
            return said
        }
    }

    // MARK: the client's step

    /// What the client does at once with a delivery, given the resends it already made.
    /// Each kind of resend happens a bounded number of times; the rest is the worker's.
    static func clientStep(for delivery: Delivery, after resends: ClientResends) -> ClientStep {
        if delivery.verdict == .notProcessed {
            return resends.notProcessed < clientNotProcessedResends ? .resendElsewhere : .done
        }
        guard delivery.status != nil else { return .done }
        switch delivery.reason {
        case APNsReason.expiredProviderToken.rawValue:
            return resends.renewedProviderToken ? .done : .renewProviderTokenAndResend
        case APNsReason.tooManyProviderTokenUpdates.rawValue:
            return resends.replacedConnection ? .done : .replaceConnectionAndResend
        default:
            return .done
        }
    }
}
