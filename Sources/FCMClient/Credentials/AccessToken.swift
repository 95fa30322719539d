import Foundation
import PGPushCore

/// An OAuth 2.0 access token that FCM requests carry as `Authorization: Bearer …`, shared by
/// an app's connections until shortly before it expires. The value is a secret: it appears
/// in no description or log.
package struct AccessToken: Sendable, Equatable, CustomStringConvertible {
    package let value: String
    package let expiresAt: Date
    /// When a new token is fetched: `renewalMargin` before expiry, or halfway through a
    /// lifetime shorter than twice that (a token renewed at once would be a storm).
    package let renewAt: Date

    /// Google's tokens live an hour; five minutes leave room for a slow exchange and a clock
    /// that drifts.
    package static let renewalMargin: TimeInterval = 300
    /// A token endpoint that names no lifetime is taken to mean Google's hour.
    package static let assumedLifetime: TimeInterval = 3600

    package init(value: String, lifetime: TimeInterval, receivedAt: Date) {
        self.value = value
        expiresAt = receivedAt + lifetime
        renewAt = receivedAt + max(lifetime - Self.renewalMargin, lifetime / 2)
    }

    package func needsRenewal(at now: Date) -> Bool { now >= renewAt }

    /// The same token, renewed from `instant` on (after a failed renewal).
    func renewing(at instant: Date) -> AccessToken {
        AccessToken(value: value, expiresAt: expiresAt, renewAt: instant)
    }

    private init(value: String, expiresAt: Date, renewAt: Date) {
        self.value = value
        self.expiresAt = expiresAt
        self.renewAt = renewAt
    }

    package var description: String { "AccessToken(expires \(expiresAt.formatted(.iso8601)))" }
}

/// What the token endpoint's answer to an assertion means, decided from the status and the
/// body alone (RFC 6749 §5, Google's service-account flow). The body comes from the
/// network: any bytes give an answer, and nothing from it reaches a header or a log raw.
package enum TokenExchangeAnswer: Sendable, Equatable {
    case issued(AccessToken)
    /// Refused for good (a deleted or rotated key, an email that does not match it, a
    /// clock too far off): FCM sending pauses with this reason until an operator acts.
    case refused(reason: String)
    /// Worth asking again later: the endpoint was busy or failing.
    case retry(reason: String)

    /// The longest token accepted: Google's are a few hundred characters.
    static let longestToken = 4096
    /// How much of the endpoint's own words is kept in a reason.
    static let longestDescription = 200
    /// Error codes that mean "try again" whatever the status (as Google's auth library reads them).
    static let transientErrors: Set<String> = ["internal_failure", "server_error", "temporarily_unavailable"]

    package static func decide(status: Int, body: some Collection<UInt8>, receivedAt: Date) -> TokenExchangeAnswer {
        let json = JSONValue.parse(body)
        if status == 200 {
            guard let value = json?["access_token"]?.stringValue, isHeaderSafe(value) else {
                return .retry(reason: "the token endpoint answered 200 without a usable access_token")
            }
            // expires_in is a number, or a number in a string from some servers.
            var lifetime = AccessToken.assumedLifetime
            if let field = json?["expires_in"] {
                guard let named = field.numberValue ?? field.stringValue.flatMap(Double.init), named.isFinite, named > 0 else {
                    return .retry(reason: "the token endpoint answered 200 with an expires_in that is not a positive number")
                }
                lifetime = named
            }
            return .issued(AccessToken(value: value, lifetime: min(lifetime, 86_400), receivedAt: receivedAt))
        }
        let code = json?["error"]?.stringValue.map(printable)
        let said = [code, json?["error_description"]?.stringValue.map(printable)].compactMap { $0 }.joined(separator: ": ")
        let detail = said.isEmpty ? "HTTP \(status)" : "HTTP \(status) \(said)"
        if status == 408 || status == 429 || status >= 500 || code.map(transientErrors.contains) == true {
            return .retry(reason: "the token endpoint is unavailable (\(detail))")
        }
        return .refused(reason: "Google refused the service account's assertion (\(detail)): check that the key "
                        + "file's key is not deleted or rotated, that client_email belongs to it, and this machine's clock")
    }

    /// Printable ASCII without spaces: what a bearer token is (RFC 6750 §2.1), and all that
    /// may go into a header.
    static func isHeaderSafe(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= longestToken && token.isVisibleASCII
    }

    /// The endpoint's words with hidden characters replaced, clipped.
    static func printable(_ text: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars.prefix(longestDescription) {
            result.append(scalar.isHiddenInText ? "\u{FFFD}" : scalar)
        }
        return String(result)
    }
}
