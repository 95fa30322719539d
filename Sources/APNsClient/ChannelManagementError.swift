import APNsCore
import PGPushCore

/// A channel management request that did not succeed, said in words: what APNs answered,
/// what it means, and what to do about it.
package struct ChannelManagementError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status, nil when no answer came.
    package let status: Int?
    /// APNs's reason, when its answer had one.
    package let reason: String?
    package let description: String

    package init(status: Int?, reason: String?, detail: String) {
        self.status = status
        self.reason = reason
        description = detail
    }

    init(_ delivery: Delivery, attempts: Int, creating: Bool) {
        let status = delivery.status
        let failure = delivery.failure?.detail
        let reason = delivery.failure == nil ? delivery.reason : nil
        let tries = attempts > 1 ? " (after \(attempts) attempts)" : ""
        var detail: String
        if let failure {
            detail = "no answer from APNs\(tries): \(failure)"
            if creating { detail += "; the channel may have been created all the same: see `pgpush channels list`" }
        } else {
            let said = [status.map(String.init), reason].compactMap { $0 }.joined(separator: " ")
            detail = "APNs answered \(said)\(tries): " + Self.explain(reason: reason, status: status ?? 0)
            if creating, (status ?? 0) >= 500 {
                detail += "; the channel may have been created all the same: see `pgpush channels list`"
            }
        }
        self.init(status: status, reason: reason, detail: detail)
    }

    static func explain(reason: String?, status: Int) -> String {
        switch reason.flatMap(APNsReason.init(rawValue:)) {
        case .cannotCreateChannelConfig?:
            return "the app already has the most channels APNs allows (10,000 per app and environment); "
                + "delete channels whose events are over (`pgpush channels delete`)"
        case .featureNotEnabled?:
            return "broadcast push is not enabled for this app: enable it for the App ID on developer.apple.com "
                + "(Certificates, Identifiers & Profiles), not in Xcode"
        case .channelNotRegistered?:
            return "APNs knows no such channel in this environment (never created here, or deleted)"
        case .badChannelID?, .missingChannelID?:
            return "the channel id is not one APNs gave (it must be the base64 id returned by create)"
        case .topicMismatch?:
            return "the key's team or the certificate does not cover this bundle id"
        case .badCertificate?, .badCertificateEnvironment?, .invalidProviderToken?, .expiredProviderToken?,
             .missingProviderToken?, .badEnvironmentKeyInToken?, .badEnvironmentKeyIDInToken?, .unrelatedKeyIDInToken?:
            return "APNs refused the app's credentials; `pgpush doctor` checks them"
        case .tooManyRequests?:
            return "too many requests: try again later"
        case .badRequestParams?, .badRequestPayload?, .missingPushType?, .invalidPushType?:
            return "APNs refused the request body (a pgpush bug: please report it)"
        default:
            if status >= 500 { return "APNs is in trouble or unavailable: try again later" }
            return "unexpected answer"
        }
    }
}
