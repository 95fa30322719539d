import APNsCore
import APNsSimulator
import FCMClient
import Foundation
import HTTP2TLS
import PGPushCore
import PushCrypto
import PushWorker
import WebPushClient

/// The inputs pgpush takes from outside, as fuzz targets: each takes arbitrary
/// bytes, must return without crashing, and checks an invariant where one
/// exists (a crash or a failed `precondition` is what the fuzzer reports).
/// The same functions replay the seed corpus in the regression tests.
package enum FuzzTarget: String, CaseIterable, Sendable {
    case payload
    case errorBody = "error-body"
    case configuration
    case simulatorRequest = "simulator-request"
    case fcmAnswer = "fcm-answer"
    case fcmPayload = "fcm-payload"
    case http1Answer = "http1-answer"
    case webPushInput = "webpush-input"

    package func run(_ bytes: [UInt8]) {
        switch self {
        case .payload: Self.payload(bytes)
        case .errorBody: Self.errorBody(bytes)
        case .configuration: Self.configuration(bytes)
        case .simulatorRequest: Self.simulatorRequest(bytes)
        case .fcmAnswer: Self.fcmAnswer(bytes)
        case .fcmPayload: Self.fcmPayload(bytes)
        case .http1Answer: Self.http1Answer(bytes)
        case .webPushInput: Self.webPushInput(bytes)
        }
    }

    /// What an HTTP/1.1 push service answers, in two reads split where the first byte says:
    /// whatever comes, the reader stays within its bounds and never returns an answer larger.
    static func http1Answer(_ bytes: [UInt8]) {
        var parser = HTTP1Parser(kind: .response, maxHeadBytes: 1024, maxBodyBytes: 2048)
        let split = bytes.isEmpty ? 0 : Int(bytes[0]) % bytes.count
        for (index, part) in [bytes[..<split], bytes[split...]].enumerated() {
            Array(part).withUnsafeBytes { parser.append($0) }
            while let message = try? parser.next(atEnd: index == 1) {
                precondition(message.body.count <= 2048, "an answer past the body bound was returned")
                precondition((100...999).contains(message.status), "an answer without a status was returned")
            }
        }
    }

    /// A Web Push row's subscription, and a push service's answer body: what is read holds
    /// the lengths RFC 8291 needs, and any answer is some verdict.
    static func webPushInput(_ bytes: [UInt8]) {
        if let subscription = try? WebPushSubscription(json: bytes) {
            precondition(subscription.p256dh.count == 65 && subscription.auth.count == 16, "a subscription with wrong key lengths")
            precondition(subscription.endpoint.target.hasPrefix("/") || subscription.endpoint.target.hasPrefix("?"),
                         "an endpoint target that is not a path")
        }
        let statuses = [201, 400, 401, 403, 404, 410, 413, 429, 500, 503]
        let status = statuses[Int(bytes.first ?? 0) % statuses.count]
        _ = WebPushPolicy.delivery(status: status, location: nil, apnsID: nil, retryAfter: String(decoding: bytes.prefix(30), as: UTF8.self),
                                   body: bytes, origin: PushServiceOrigin(host: "push.example"))
    }

    /// Validation and compaction: compact output validates again to itself.
    static func payload(_ bytes: [UInt8]) {
        for type in [PushType.alert, .background, .voip] {
            guard let payload = try? Payload(validating: bytes, for: type) else { continue }
            let again = try? Payload(validating: payload.bytes, for: type)
            precondition(again?.bytes == payload.bytes, "compaction is not idempotent")
            precondition(payload.bytes.count <= type.payloadLimit, "payload over its limit accepted")
        }
    }

    /// The APNs error body parser: what it reads, it writes back the same.
    static func errorBody(_ bytes: [UInt8]) {
        guard let body = APNsErrorBody.parse(bytes) else { return }
        let reparsed = APNsErrorBody.parse(body.encoded())
        precondition(reparsed?.reason == body.reason, "error body reason does not round-trip")
    }

    /// What FCM and Google's token endpoint answer: the first byte picks the status. An error
    /// body read round-trips; a token taken from an answer could never forge a header.
    static func fcmAnswer(_ bytes: [UInt8]) {
        let statuses = [200, 400, 401, 403, 404, 408, 429, 500, 502, 503]
        let status = statuses[Int(bytes.first ?? 0) % statuses.count]
        let body = Array(bytes.dropFirst())
        _ = FCMPolicy.delivery(status: status, retryAfter: String(decoding: body.prefix(40), as: UTF8.self), body: body,
                               project: "fuzz")
        if let error = FCMErrorBody.parse(body) {
            precondition(FCMErrorBody.parse(error.encoded(httpStatus: status)) == error, "FCM error body does not round-trip")
        }
        if case .issued(let token) = TokenExchangeAnswer.decide(status: status, body: body, receivedAt: Date()) {
            precondition(token.value.utf8.allSatisfy { (0x21...0x7E).contains($0) }, "an access token that could forge a header")
            precondition(token.renewAt <= token.expiresAt, "a token renewed after it expires")
        }
    }

    /// A row's FCM payload: what is accepted becomes a request body that is JSON, within the limit.
    static func fcmPayload(_ bytes: [UInt8]) {
        for target in [FCMMessage.Target.token("t"), .topic("news")] {
            guard let message = try? FCMMessage(target: target, payload: bytes, priority: 10, timeToLive: 60, deliverOnce: false,
                                                 collapseID: "c") else { continue }
            precondition(JSONValue.parse(message.body) != nil, "an FCM request body that is not JSON")
        }
    }

    /// The `--config` JSON file.
    static func configuration(_ bytes: [UInt8]) {
        _ = try? WorkerConfiguration.apps(fromFile: Data(bytes))
    }

    /// A request as the simulator sees it: first line the path, then `name: value`
    /// header lines, a blank line, the body.
    static func simulatorRequest(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        let parts = text.components(separatedBy: "\n\n")
        var lines = (parts.first ?? "").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let path = lines.isEmpty ? "" : lines.removeFirst()
        let headers = lines.compactMap { line -> HeaderField? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return HeaderField(String(line[..<colon]).lowercased(),
                                        String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
        let body = Array(parts.dropFirst().joined(separator: "\n\n").utf8)
        if let key = verifier {
            _ = key.verify(authorization: headers.value(of: "authorization"), now: Date(timeIntervalSince1970: 1_700_000_000))
        }
        guard case .success(let token) = RequestRules.checkRoute(method: "POST", path: path) else { return }
        _ = RequestRules.checkContent(rawToken: token, headers: headers, body: body, topics: .token(bundleID: "com.example.app"))
    }

    /// A fixed verifier: the key is generated once per process.
    private static let verifier: ProviderTokenVerifier? = {
        guard let key = try? ES256PrivateKey.generate(), let publicKey = try? key.publicKey() else { return nil }
        return ProviderTokenVerifier(key: ProviderTokenKey(teamID: "TEAM123456", keyID: "KEY1234567", publicKey: publicKey))
    }()
}
