import Foundation
import PGPushCore
import PushCrypto

/// An answer the simulator gives.
package struct WebPushSimulatorAnswer: Sendable {
    package var status: Int
    package var headers: [(String, String)]
    package var body: [UInt8]
}

/// What the simulator counted.
package struct WebPushSimulatorReport: Sendable, Equatable, Codable {
    package var requests = 0
    package var delivered = 0
    /// Requests refused, by the reason the answer gave.
    package var refusals: [String: Int] = [:]
    /// The plaintexts of the accepted messages, decrypted with the subscriptions' keys, in order.
    package var deliveredPayloads: [String] = []
}

/// Faults the simulator injects.
package struct WebPushSimulatorFaults: Sendable {
    /// Every nth request is answered 429 / 503 with `Retry-After`.
    package var throttleEvery: Int?
    package var unavailableEvery: Int?
    package var retryAfterSeconds = 1
    /// The first requests to a known subscription are answered with these statuses, in
    /// order, before any other check (one answer of each kind for tests); 429 and 503 carry
    /// `Retry-After`.
    package var firstAnswers: [Int] = []

    package init() {}
}

/// The simulator's rules, written from RFC 8030 (the push request), RFC 8291 (the message
/// encryption) and RFC 8292 (VAPID), with the answers real push services give where they
/// differ (Apple's reasons, a 403 for another application server key), independently of
/// pgpush's client. State (subscriptions, counts) is the caller's, passed in.
package struct WebPushSimulatorRules: Sendable {
    /// The simulator's own origin: what a VAPID token's `aud` must be.
    package let origin: String
    package let faults: WebPushSimulatorFaults
    /// Tokens may expire at most this far ahead (RFC 8292 §2).
    static let longestTokenLifetime: TimeInterval = 24 * 3600
    static let largestBody = 4096
    static let urgencies: Set<String> = ["very-low", "low", "normal", "high"]

    package init(origin: String, faults: WebPushSimulatorFaults = WebPushSimulatorFaults()) {
        self.origin = origin
        self.faults = faults
    }

    package struct State: Sendable {
        package var subscriptions: [String: SimulatedSubscription] = [:]
        /// Subscriptions the browser dropped: answered 410.
        package var gone: Set<String> = []
        package var nextMessage = 1
        /// How many of `WebPushSimulatorFaults.firstAnswers` were given.
        package var scriptedAnswers = 0
        package var report = WebPushSimulatorReport()

        package init() {}
    }

    /// A new subscription for a web app whose VAPID public key is `applicationServerKey`.
    package func mint(applicationServerKey: [UInt8], state: inout State) throws(WebPushCryptoError) -> SimulatedSubscription {
        let subscription = try SimulatedSubscription.mint(applicationServerKey: applicationServerKey)
        state.subscriptions[subscription.id] = subscription
        return subscription
    }

    /// The answer to a push request (RFC 8030 §5).
    package func push(method: String, path: String, headers: [(String, String)], body: [UInt8], now: Date,
                      state: inout State) -> WebPushSimulatorAnswer {
        state.report.requests += 1
        func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
        guard method == "POST" else { return refuse(405, "MethodNotAllowed", state: &state) }
        guard path.hasPrefix("/push/") else { return refuse(404, "NotFound", state: &state) }
        let id = String(path.dropFirst("/push/".count))
        if state.gone.contains(id) { return refuse(410, "Unregistered", state: &state) }
        guard let subscription = state.subscriptions[id] else { return refuse(404, "NotFound", state: &state) }
        if state.scriptedAnswers < faults.firstAnswers.count {
            let status = faults.firstAnswers[state.scriptedAnswers]
            state.scriptedAnswers += 1
            let wait = [429, 503].contains(status) ? [("retry-after", String(faults.retryAfterSeconds))] : []
            return refuse(status, "Scripted\(status)", extra: wait, state: &state)
        }
        let count = state.report.requests
        if let every = faults.unavailableEvery, count % every == 0 {
            return refuse(503, "ServiceUnavailable", extra: [("retry-after", String(faults.retryAfterSeconds))], state: &state)
        }
        if let every = faults.throttleEvery, count % every == 0 {
            return refuse(429, "TooManyRequests", extra: [("retry-after", String(faults.retryAfterSeconds))], state: &state)
        }
        switch vapidKey(header("authorization"), now: now) {
        case .failure(let why):
            return refuse(401, "InvalidVapidToken", message: why.description, state: &state)
        case .success(let key) where key != subscription.applicationServerKey:
            return refuse(403, "VapidPkHashMismatch", message: "the subscription was made with another application server key",
                          state: &state)
        case .success:
            break
        }
        guard let ttl = header("ttl"), let seconds = Int(ttl), seconds >= 0 else { return refuse(400, "BadTtl", state: &state) }
        if let urgency = header("urgency"), !Self.urgencies.contains(urgency) { return refuse(400, "BadUrgency", state: &state) }
        if let topic = header("topic") {
            let alphabet = topic.utf8.allSatisfy { Base64URL.alphabet.contains($0) }
            guard alphabet, (1...32).contains(topic.utf8.count), topic.utf8.count % 4 != 1 else {
                return refuse(400, "BadWebPushTopic", state: &state)
            }
        }
        guard header("content-encoding") == "aes128gcm" else { return refuse(400, "BadContentEncoding", state: &state) }
        guard body.count <= Self.largestBody else { return refuse(413, "PayloadTooLarge", state: &state) }
        let plaintext: [UInt8]
        do {
            plaintext = try WebPushEncryption.open(body, recipient: subscription.browserKey, auth: subscription.auth)
        } catch {
            return refuse(400, "DecryptionFailed", message: error.description, state: &state)
        }
        let message = state.nextMessage
        state.nextMessage += 1
        state.report.delivered += 1
        state.report.deliveredPayloads.append(String(decoding: plaintext, as: UTF8.self))
        return WebPushSimulatorAnswer(status: 201, headers: [("location", "\(origin)/message/\(message)"), ("ttl", ttl)], body: [])
    }

    /// The VAPID public key of a valid `vapid t=…, k=…` header, or why it is not valid.
    func vapidKey(_ authorization: String?, now: Date) -> Result<[UInt8], VAPIDRefusal> {
        guard let authorization, authorization.hasPrefix("vapid ") else { return .failure("no vapid authorization") }
        var token: Substring?, key: Substring?
        for part in authorization.dropFirst("vapid ".count).split(separator: ",") {
            let field = part.drop { $0 == " " }
            if field.hasPrefix("t=") { token = field.dropFirst(2) }
            if field.hasPrefix("k=") { key = field.dropFirst(2) }
        }
        guard let token, let key, let point = Base64URL.decode(key),
              let publicKey = try? ES256PublicKey(uncompressedPoint: point) else { return .failure("t= and k= must both be given") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]), let header = JSONValue.parse(headerBytes),
              let claims = JSONValue.parse(claimBytes)
        else { return .failure("not a compact JWS") }
        guard header["alg"]?.stringValue == "ES256" else { return .failure("alg must be ES256") }
        guard publicKey.verify(message: Array((parts[0] + "." + parts[1]).utf8), rawSignature: signature) else {
            return .failure("bad signature")
        }
        guard claims["aud"]?.stringValue == origin else { return .failure(VAPIDRefusal("aud is not \(origin)")) }
        guard let expiry = claims["exp"]?.integerValue else { return .failure("no exp") }
        let expires = Date(timeIntervalSince1970: TimeInterval(expiry))
        guard expires > now else { return .failure("expired") }
        guard expires.timeIntervalSince(now) <= Self.longestTokenLifetime else { return .failure("exp more than 24 hours ahead") }
        guard let subject = claims["sub"]?.stringValue, subject.hasPrefix("mailto:") || subject.hasPrefix("https:") else {
            return .failure("sub must be a mailto: or https: URL")
        }
        return .success(point)
    }

    private func refuse(_ status: Int, _ reason: String, message: String? = nil, extra: [(String, String)] = [],
                        state: inout State) -> WebPushSimulatorAnswer {
        state.report.refusals[reason, default: 0] += 1
        let body = #"{"reason":\#(JSONText.quoted(reason))"# + (message.map { #","message":\#(JSONText.quoted($0))"# } ?? "") + "}"
        return WebPushSimulatorAnswer(status: status, headers: [("content-type", "application/json")] + extra, body: Array(body.utf8))
    }
}

/// Why a VAPID header is refused, in the answer's `message`.
struct VAPIDRefusal: Error, ExpressibleByStringLiteral, CustomStringConvertible {
    let description: String
    init(stringLiteral value: String) { description = value }
    init(_ value: String) { description = value }
}
