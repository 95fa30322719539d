import Foundation
import PGPushCore
import PushCrypto

/// An answer the simulator gives.
package struct FCMSimulatorAnswer: Sendable, Equatable {
    package var status: Int
    package var headers: [(String, String)]
    package var body: [UInt8]

    package static func == (left: Self, right: Self) -> Bool {
        left.status == right.status && left.body == right.body
            && left.headers.map { "\($0.0): \($0.1)" } == right.headers.map { "\($0.0): \($0.1)" }
    }
}

/// What the simulator counted.
package struct FCMSimulatorReport: Sendable, Equatable, Codable {
    package var tokenRequests = 0
    package var tokensIssued = 0
    package var assertionsRefused = 0
    package var sends = 0
    package var delivered = 0
    /// Sends answered with an error, by the `errorCode` or `status` in the answer.
    package var errors: [String: Int] = [:]
    /// The accepted messages as received, in order (the `message` object's compact JSON).
    package var deliveredMessages: [String] = []
}

/// The simulator's rules, written from Google's documentation of the OAuth 2.0 service-account
/// flow and FCM HTTP v1, independently of pgpush's client. State (issued tokens, counts) is
/// the caller's, passed in.
struct FCMSimulatorRules {
    let configuration: FCMSimulatorConfiguration

    static let audience = "https://oauth2.googleapis.com/token"
    static let scopes: Set<String> = ["https://www.googleapis.com/auth/firebase.messaging",
                                      "https://www.googleapis.com/auth/cloud-platform"]
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    struct State {
        var accessTokens: [String: Date] = [:]
        var revokedTokens: Set<String> = []
        var nextToken = 1
        var nextMessage = 1
        var report = FCMSimulatorReport()
    }

    // MARK: the token endpoint

    func token(body: [UInt8], now: Date, state: inout State) -> FCMSimulatorAnswer {
        state.report.tokenRequests += 1
        let form = Self.form(body)
        guard form["grant_type"] == Self.grantType, let assertion = form["assertion"] else {
            state.report.assertionsRefused += 1
            return Self.oauthError(400, "unsupported_grant_type", "Invalid grant_type")
        }
        if let refusal = check(assertion: assertion, now: now) ?? (configuration.faults.refuseAssertions ? "Invalid JWT Signature." : nil) {
            state.report.assertionsRefused += 1
            return Self.oauthError(400, "invalid_grant", refusal)
        }
        let token = "ya29.simulated-\(state.nextToken)-\(UUID().uuidString.prefix(8))"
        state.nextToken += 1
        state.accessTokens[token] = now + TimeInterval(configuration.accessTokenLifetime)
        if configuration.faults.revokeFirstAccessToken && state.report.tokensIssued == 0 { state.revokedTokens.insert(token) }
        state.report.tokensIssued += 1
        return FCMSimulatorAnswer(status: 200, headers: [("content-type", "application/json; charset=utf-8")],
                                  body: Array(#"{"access_token":"\#(token)","expires_in":\#(configuration.accessTokenLifetime),"token_type":"Bearer"}"#.utf8))
    }

    /// Why the assertion is refused, or nil when it is good.
    func check(assertion: String, now: Date) -> String? {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let header = JSONValue.parse(headerBytes), let claims = JSONValue.parse(claimBytes)
        else { return "Invalid JWT: not a compact JWS" }
        guard header["alg"]?.stringValue == "RS256" else { return "Invalid JWT: alg must be RS256" }
        if let kid = header["kid"], kid.stringValue != configuration.privateKeyID { return "Invalid JWT Signature." }
        guard configuration.publicKey.verify(message: Array((parts[0] + "." + parts[1]).utf8), signature: signature) else {
            return "Invalid JWT Signature."
        }
        guard claims["iss"]?.stringValue == configuration.clientEmail else { return "Invalid JWT Signature." }
        guard claims["aud"]?.stringValue == Self.audience else { return "Invalid JWT: Failed audience check." }
        let scopes = Set((claims["scope"]?.stringValue ?? "").split(separator: " ").map(String.init))
        guard !scopes.isDisjoint(with: Self.scopes) else { return "Invalid JWT: no scope to send FCM messages" }
        guard let issued = claims["iat"]?.integerValue, let expires = claims["exp"]?.integerValue else {
            return "Invalid JWT: iat and exp are required"
        }
        let issuedAt = Date(timeIntervalSince1970: TimeInterval(issued))
        guard abs(issuedAt.timeIntervalSince(now)) <= configuration.allowedClockSkew, expires > issued, expires - issued <= 3600,
              Date(timeIntervalSince1970: TimeInterval(expires)) > now
        else {
            return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
                + "Check your iat and exp values in the JWT claim."
        }
        return nil
    }

    // MARK: messages:send

    func send(path: String, headers: [(String, String)], body: [UInt8], now: Date, state: inout State) -> FCMSimulatorAnswer {
        guard path == "/v1/projects/\(configuration.projectID)/messages:send" else {
            return Self.status(404, "NOT_FOUND", "Requested entity was not found.", state: &state)
        }
        let authorization = headers.first { $0.0 == "authorization" }?.1 ?? ""
        let presented = String(authorization.dropFirst(7))
        guard authorization.hasPrefix("Bearer "), let expiry = state.accessTokens[presented], expiry > now,
              !configuration.faults.refuseAccessTokens, !state.revokedTokens.contains(presented)
        else {
            var answer = Self.status(401, "UNAUTHENTICATED", "Request had invalid authentication credentials. "
                                     + "Expected OAuth 2 access token, login cookie or other valid authentication credential.", state: &state)
            answer.headers.append(("www-authenticate", #"Bearer realm="https://accounts.google.com/", error="invalid_token""#))
            return answer
        }
        if configuration.faults.permissionDenied {
            return Self.status(403, "PERMISSION_DENIED", "Firebase Cloud Messaging API has not been used in project "
                               + "\(configuration.projectID) before or it is disabled.", state: &state)
        }
        state.report.sends += 1
        let count = state.report.sends
        let faults = configuration.faults
        let retryAfter = [("retry-after", String(faults.retryAfterSeconds))]
        if let every = faults.unavailableEvery, count % every == 0 {
            return Self.fcmError(503, "UNAVAILABLE", "UNAVAILABLE", "The service is currently unavailable.", headers: retryAfter, state: &state)
        }
        if let every = faults.internalErrorEvery, count % every == 0 {
            return Self.fcmError(500, "INTERNAL", "INTERNAL", "Internal error encountered.", state: &state)
        }
        if let every = faults.quotaExceededEvery, count % every == 0 {
            return Self.fcmError(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "Quota exceeded for quota metric 'Messages'.",
                                 headers: retryAfter, state: &state)
        }
        guard let request = JSONValue.parse(body), case .object(let members) = request["message"] ?? .null else {
            return Self.fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Invalid JSON payload received.", state: &state)
        }
        let targets = ["token", "topic", "condition"].filter { members[$0] != nil }
        guard targets.count == 1 else {
            return Self.fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Exactly one of token, topic or condition must be set.",
                                 state: &state)
        }
        let allowed: Set<String> = ["token", "topic", "condition", "notification", "data", "android", "apns", "webpush", "fcm_options", "name"]
        if let unknown = members.keys.sorted().first(where: { !allowed.contains($0) }) {
            return Self.fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Invalid JSON payload received. Unknown name \"\(unknown)\" at 'message'.",
                                 field: "message", state: &state)
        }
        if case .object(let data) = members["data"] ?? .object([:]) {
            if let index = data.keys.sorted().firstIndex(where: { data[$0]?.stringValue == nil }) {
                return Self.fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Invalid value at 'message.data[\(index)].value' (TYPE_STRING)",
                                     field: "message.data[\(index)].value", state: &state)
            }
        } else {
            return Self.fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Invalid value at 'message.data'", field: "message.data", state: &state)
        }
        for block in ["notification", "android", "apns", "webpush", "fcm_options"] {
            guard let value = members[block] else { continue }
            guard case .object = value else {
                return Self.fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT",
                                     "Invalid value at 'message.\(block)': expected an object", field: "message.\(block)", state: &state)
            }
        }
        if let token = members["token"]?.stringValue, let fate = configuration.tokenFates[token] {
            switch fate {
            case .unregistered:
                return Self.fcmError(404, "NOT_FOUND", "UNREGISTERED", "Requested entity was not found.", state: &state)
            case .invalid:
                return Self.fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT",
                                     "The registration token is not a valid FCM registration token", field: "message.token", state: &state)
            case .senderIDMismatch:
                return Self.fcmError(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH", "SenderId mismatch", state: &state)
            case .thirdPartyAuthError:
                return Self.fcmError(401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR", "Auth error from APNS or Web Push Service",
                                     state: &state)
            }
        }
        if request["validate_only"] == .bool(true) {
            return Self.delivered(name: "projects/\(configuration.projectID)/messages/fake_message_id")
        }
        state.report.delivered += 1
        state.report.deliveredMessages.append(JSONValue.object(members).encoded())
        let name = "projects/\(configuration.projectID)/messages/0:\(1_780_000_000_000 + state.nextMessage)%simulated"
        state.nextMessage += 1
        return Self.delivered(name: name)
    }

    // MARK: answers

    static func delivered(name: String) -> FCMSimulatorAnswer {
        FCMSimulatorAnswer(status: 200, headers: [("content-type", "application/json; charset=UTF-8")],
                           body: Array("{\n  \"name\": \(JSONText.quoted(name))\n}\n".utf8))
    }

    /// An error answer as Google's front end gives it, with no FcmError detail.
    static func status(_ http: Int, _ status: String, _ message: String, state: inout State) -> FCMSimulatorAnswer {
        state.report.errors[status, default: 0] += 1
        let body = "{\n  \"error\": {\n    \"code\": \(http),\n    \"message\": \(JSONText.quoted(message)),\n    \"status\": \"\(status)\"\n  }\n}\n"
        return FCMSimulatorAnswer(status: http, headers: [("content-type", "application/json; charset=UTF-8")], body: Array(body.utf8))
    }

    /// An FCM error with its FcmError detail, and a BadRequest detail when `field` is named.
    static func fcmError(_ http: Int, _ status: String, _ code: String, _ message: String, field: String? = nil,
                         headers: [(String, String)] = [], state: inout State) -> FCMSimulatorAnswer {
        state.report.errors[code, default: 0] += 1
        var details = ["{\"@type\": \"type.googleapis.com/google.firebase.fcm.v1.FcmError\", \"errorCode\": \"\(code)\"}"]
        if let field {
            details.append("{\"@type\": \"type.googleapis.com/google.rpc.BadRequest\", \"fieldViolations\": "
                           + "[{\"field\": \(JSONText.quoted(field)), \"description\": \(JSONText.quoted(message))}]}")
        }
        let body = "{\n  \"error\": {\n    \"code\": \(http),\n    \"message\": \(JSONText.quoted(message)),\n"
            + "    \"status\": \"\(status)\",\n    \"details\": [\n      \(details.joined(separator: ",\n      "))\n    ]\n  }\n}\n"
        return FCMSimulatorAnswer(status: http, headers: [("content-type", "application/json; charset=UTF-8")] + headers,
                                  body: Array(body.utf8))
    }

    static func oauthError(_ http: Int, _ error: String, _ description: String) -> FCMSimulatorAnswer {
        FCMSimulatorAnswer(status: http, headers: [("content-type", "application/json; charset=utf-8")],
                           body: Array("{\"error\":\(JSONText.quoted(error)),\"error_description\":\(JSONText.quoted(description))}".utf8))
    }

    /// An `application/x-www-form-urlencoded` body's fields.
    static func form(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            let decode = { (text: Substring) in text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            if let key = decode(parts[0]), let value = decode(parts[1]) { fields[key] = value }
        }
        return fields
    }
}
