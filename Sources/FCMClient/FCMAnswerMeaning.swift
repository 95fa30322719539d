import Foundation
import PGPushCore

/// What an FCM HTTP v1 answer means, whatever status carried it: the FCM half of the README's
/// answer table. Decided from the status, `Retry-After` and the error body alone; what then
/// happens to the row (retry timing, pauses, the invalid-token list) is the shared rules'.
///
/// | answer | meaning |
/// |---|---|
/// | 200 | delivered, with the message's `name` |
/// | 404 UNREGISTERED, 400 INVALID_ARGUMENT about the token, 403 SENDER_ID_MISMATCH | deadToken |
/// | other 400 INVALID_ARGUMENT, other 4xx | rowRejected, FCM's message kept |
/// | 401 without an FcmError code (the access token) | accessTokenRefused |
/// | 403 PERMISSION_DENIED (API not enabled, no permission) | credentialsRefused |
/// | 401 THIRD_PARTY_AUTH_ERROR (APNs or web credentials in Firebase) | thirdPartyCredentialsRefused |
/// | 429 QUOTA_EXCEEDED / RESOURCE_EXHAUSTED | quotaExceeded, after `Retry-After` or from 60 s |
/// | 500 INTERNAL, 503 UNAVAILABLE, other 5xx, statuses FCM never uses | serverTrouble, never sooner than `Retry-After` |
///
/// Choices worth knowing:
/// - The FcmError `errorCode` decides when there is one, else the body's `status`, else the
///   HTTP status (a proxy's HTML page has neither).
/// - A 401 is the access token's fault only without an FcmError code: THIRD_PARTY_AUTH_ERROR
///   also comes as 401, and renewing the access token for it would loop for ever.
/// - SENDER_ID_MISMATCH lists the token like any dead one; when most of an app's answers are
///   SENDER_ID_MISMATCH the app holds another project's key, and its health says so.
public enum FCMAnswerMeaning: Equatable, Sendable {
    case delivered(messageID: String?)
    case deadToken(reason: String)
    case rowRejected(reason: String, detail: String?)
    case accessTokenRefused
    case credentialsRefused(reason: String, detail: String?)
    case thirdPartyCredentialsRefused
    case quotaExceeded(reason: String, retryAfter: Duration?)
    case serverTrouble(reason: String, retryAfter: Duration?)

    /// Google asks for at least a minute before retrying a message-rate or topic-rate quota.
    public static let quotaBackoffStart = Duration.seconds(60)

    public static func of(status: Int, retryAfter: String?, body: some Collection<UInt8>) -> FCMAnswerMeaning {
        let error = FCMErrorBody.parse(body)
        let reason = error?.reason ?? Self.statusName(status)
        let wait = retryAfter.flatMap { Self.retryAfter($0, now: Date()) }
        if (200..<300).contains(status) {
            return .delivered(messageID: FCMSendResult.messageName(body))
        }
        switch reason {
        case "UNREGISTERED", "SENDER_ID_MISMATCH":
            return .deadToken(reason: reason)
        case "THIRD_PARTY_AUTH_ERROR":
            return .thirdPartyCredentialsRefused
        case "QUOTA_EXCEEDED", "RESOURCE_EXHAUSTED":
            return .quotaExceeded(reason: reason, retryAfter: wait)
        case "INVALID_ARGUMENT" where error?.concernsToken == true:
            return .deadToken(reason: reason)
        default:
            break
        }
        switch status {
        case 401 where error?.errorCode == nil:
            return .accessTokenRefused
        case 401, 403:
            return .credentialsRefused(reason: reason, detail: error?.message)
        case 429:
            return .quotaExceeded(reason: reason, retryAfter: wait)
        case 400..<500:
            return .rowRejected(reason: reason, detail: error?.message)
        default:
            return .serverTrouble(reason: reason, retryAfter: wait)
        }
    }

    /// The gRPC status name Google's front end gives an HTTP status, for bodies without one.
    static func statusName(_ status: Int) -> String {
        switch status {
        case 400: "INVALID_ARGUMENT"
        case 401: "UNAUTHENTICATED"
        case 403: "PERMISSION_DENIED"
        case 404: "NOT_FOUND"
        case 429: "RESOURCE_EXHAUSTED"
        case 500: "INTERNAL"
        case 503: "UNAVAILABLE"
        default: "HTTP \(status)"
        }
    }

    /// `Retry-After` as seconds or an HTTP date (RFC 9110 §10.2.3); nil when it is neither,
    /// and at most an hour: a header cannot hold a row for ever.
    static func retryAfter(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        var seconds: Double?
        if let whole = Int(text), whole >= 0 {
            seconds = Double(whole)
        } else {
            let format = DateFormatter()
            format.locale = Locale(identifier: "en_US_POSIX")
            format.timeZone = TimeZone(identifier: "GMT")
            format.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            seconds = format.date(from: text).map { max($0.timeIntervalSince(now), 0) }
        }
        return seconds.map { .milliseconds(Int64(min($0, 3600) * 1000)) }
    }
}

/// What a 200 from `messages:send` carries.
enum FCMSendResult {
    /// The accepted message's `name` (`projects/<p>/messages/<id>`), the row's `message_id`.
    static func messageName(_ body: some Collection<UInt8>) -> String? {
        guard let name = JSONValue.parse(body)?["name"]?.stringValue, !name.isEmpty, name.utf8.count <= 1024 else { return nil }
        return name
    }
}
