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
        let seconds: Double
        if let whole = Int(text), whole >= 0 {
            seconds = Double(whole)
        } else if let date = httpDate(text) {
            seconds = max(date.timeIntervalSince(now), 0)
        } else {
            return nil
        }
        return .milliseconds(Int64(min(seconds, 3600) * 1000))
    }

    /// An IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`, the form RFC 9110 §5.6.7 says to send;
    /// read by hand: the bytes come from the network, and Foundation's formatters are slow and
    /// keep state.
    static func httpDate(_ text: String) -> Date? {
        let parts = text.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT",
              let day = Int(parts[1]), (1...31).contains(day),
              let month = months.firstIndex(of: String(parts[2])),
              let year = Int(parts[3]), (1970...9999).contains(year)
        else { return nil }
        let clock = parts[4].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3, (0...23).contains(clock[0]), (0...59).contains(clock[1]), (0...60).contains(clock[2]) else {
            return nil
        }
        // Days since 1970-01-01 of a proleptic Gregorian date (the civil-from-days inverse).
        let shiftedYear = month < 2 ? year - 1 : year
        let era = shiftedYear / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * ((month + 10) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + clock[0] * 3600 + clock[1] * 60 + clock[2]))
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
