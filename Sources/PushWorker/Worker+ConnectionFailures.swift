import APNsClient
import Foundation
import PushTransport

/// Failures to reach APNs, made visible: each is logged (`apns_connection_failed`) the
/// first time for its app and cause, then at most once an interval with how many there
/// were, and /metrics counts every one by app and cause.
extension Worker {
    /// How long one app's failures of one cause go unlogged after a line about them.
    static let connectionFailureLogInterval: Duration = .seconds(60)

    static func logConnectionFailures(of senders: [Route: any NotificationSender], to warnings: RepeatedWarnings) {
        for (route, sender) in senders {
            sender.onConnectionFailure { failure in
                warnings.warning("apns_connection_failed", key: route.description + "\u{0}" + failure.cause.rawValue,
                                 connectionFailureFields(app: route.app, failure))
            }
        }
    }

    /// The line's fields: where, which cause, why, and for a certificate what it was and
    /// until when it was valid; for ALPN what the server picked instead of h2.
    static func connectionFailureFields(app: String, _ failure: ConnectionFailure) -> [(key: String, value: Any)] {
        var fields: [(key: String, value: Any)] = [
            ("app", app), ("endpoint", failure.endpoint), ("cause", failure.cause.rawValue), ("reason", failure.reason),
        ]
        if let code = failure.verifyResult { fields.append(("verify_result", code)) }
        if let certificate = failure.certificate {
            fields.append(("certificate_subject", certificate.subject))
            fields.append(("certificate_not_before", certificate.notBefore.formatted(.iso8601)))
            fields.append(("certificate_not_after", certificate.notAfter.formatted(.iso8601)))
        }
        if failure.cause == .alpn { fields.append(("alpn_selected", failure.alpnSelected ?? "none")) }
        return fields
    }
}
