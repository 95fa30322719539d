/// The push services a row can go to: the `service` column of `pgpush.notifications`.
package enum Service: String, CaseIterable, Sendable, Hashable, Comparable {
    /// Apple Push Notification service (HTTP/2, token or certificate authentication).
    case apns
    /// Firebase Cloud Messaging, HTTP v1 API (service-account access tokens).
    case fcm
    /// RFC 8030 push services (VAPID, aes128gcm).
    case webpush

    package static func < (lhs: Service, rhs: Service) -> Bool { lhs.rawValue < rhs.rawValue }
}
