import Foundation
import PGPushCore

/// What every FCM HTTP v1 answer means, in one place: the FCM half of the README's answer
/// table. Decided from the status, `Retry-After` and the error body alone; when a retried row
/// is due again is the shared `RetryRules`', what the sender does at once (a new access token
/// after a 401) `FCMSender`'s.
///
/// | answer | verdict |
/// |---|---|
/// | 200 | delivered, `message_id` = the message's `name` |
/// | 404 UNREGISTERED, 400 INVALID_ARGUMENT about the token, 403 SENDER_ID_MISMATCH | failed, token listed |
/// | other 400 INVALID_ARGUMENT, other 4xx | failed, FCM's message kept as the detail |
/// | 401 without an FcmError code (the access token) | the sender renews the token once and resends; refused again: the app's FCM sending paused |
/// | 403 PERMISSION_DENIED (API not enabled, no permission) | the app's FCM sending paused, with what to check |
/// | 401 THIRD_PARTY_AUTH_ERROR (APNs or web credentials in Firebase) | failed, and `app_health` flags it; Android rows go on |
/// | 429 QUOTA_EXCEEDED / RESOURCE_EXHAUSTED | throttled: after `Retry-After`, else back-off from 60 s |
/// | 500 INTERNAL, 503 UNAVAILABLE, other 5xx, statuses FCM never uses | server trouble, never sooner than `Retry-After` |
///
/// Choices worth knowing:
/// - The FcmError `errorCode` decides when there is one, else the body's `status`, else the
///   HTTP status (a proxy's HTML page has neither).
/// - A 401 is the access token's fault only without an FcmError code: THIRD_PARTY_AUTH_ERROR
///   also comes as 401, and renewing the access token for it would loop for ever.
/// - SENDER_ID_MISMATCH lists the token like any dead one, and hints at a wrong setup: when
///   it is most of an app's answers, the app holds another project's key.
/// - An answer past the access token's check (anything but 401 and 403) proves the app's
///   credentials, 5xx excepted: a front end in trouble says nothing about them.
package enum FCMPolicy {
    /// The reasons FCM's answers and pgpush's FCM refusals give (`last_reason`): FCM's error
    /// codes, the status names of its answers, the access token's, and `FCMMessageError`'s.
    package static let reasons: Set<String> = [
        "UNREGISTERED", "INVALID_ARGUMENT", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL",
        "THIRD_PARTY_AUTH_ERROR", "APNS_AUTH_ERROR", "UNSPECIFIED_ERROR", "UNAUTHENTICATED", "PERMISSION_DENIED",
        "NOT_FOUND", "RESOURCE_EXHAUSTED", "AccessTokenRefused", "AccessTokenUnavailable", "BadDeviceToken", "BadChannelId",
        "InvalidPayload", "PayloadTooLarge",
    ]

    /// Google's advice for a 429 without `Retry-After`: back off, starting at a minute.
    static let quotaBackoffFloor: Duration = .seconds(60)

    /// Whether an answer refuses the request's access token (401 without an FcmError code).
    package static func refusesAccessToken(status: Int, body: some Collection<UInt8>) -> Bool {
        status == 401 && FCMErrorBody.parse(body)?.errorCode == nil
    }

    /// The delivery an answer makes. `project` names the project in what a pause says to check.
    package static func delivery(status: Int, retryAfter: String?, body: some Collection<UInt8>, project: String,
                                 now: Date = Date()) -> Delivery {
        if (200..<300).contains(status) {
            return Delivery(verdict: .delivered, status: status, messageID: FCMSendResult.messageName(body),
                            provesCredentials: true, hintsWrongSetup: false)
        }
        let error = FCMErrorBody.parse(body)
        let reason = error?.reason ?? Self.statusName(status)
        let wait = retryAfter.flatMap { RetryAfter.duration($0, now: now) }
        var delivery = Delivery(verdict: .failed(listsTarget: false), status: status, reason: reason, detail: error?.message,
                                provesCredentials: ![401, 403].contains(status) && status < 500,
                                hintsWrongSetup: reason == "SENDER_ID_MISMATCH")
        switch reason {
        case "UNREGISTERED", "SENDER_ID_MISMATCH":
            delivery.verdict = .failed(listsTarget: true)
            return delivery
        case "THIRD_PARTY_AUTH_ERROR", "APNS_AUTH_ERROR":
            delivery.healthFlag = "\(reason): Firebase refused the APNs or web push credentials uploaded to project "
                + "\(project) (Project settings, Cloud Messaging); iOS and web targets fail, Android ones go on"
            return delivery
        case "QUOTA_EXCEEDED", "RESOURCE_EXHAUSTED":
            delivery.verdict = .throttled(retryAfter: wait, from: quotaBackoffFloor)
            return delivery
        case "INVALID_ARGUMENT" where error?.concernsToken == true:
            delivery.verdict = .failed(listsTarget: true)
            return delivery
        default:
            break
        }
        switch status {
        case 401, 403:
            delivery.verdict = .paused(.service, reason: "\(reason): FCM refused the service account for project \(project)"
                + (error?.message.map { " (\($0))" } ?? "")
                + "; check that the Firebase Cloud Messaging API is enabled for the project and that the account may send "
                + "(role Firebase Cloud Messaging API Admin)")
        default:
            delivery.verdict = .answered(status: status, retryAfter: wait, throttledFrom: quotaBackoffFloor)
        }
        return delivery
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
}

/// What a 200 from `messages:send` carries.
enum FCMSendResult {
    /// The accepted message's `name` (`projects/<p>/messages/<id>`), the row's `message_id`.
    static func messageName(_ body: some Collection<UInt8>) -> String? {
        guard let name = JSONValue.parse(body)?["name"]?.stringValue, !name.isEmpty, name.utf8.count <= 1024 else { return nil }
        return name
    }
}
