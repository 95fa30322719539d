import Foundation
import PGPushCore

/// An FCM HTTP v1 send: `POST /v1/projects/<project>/messages:send` with
/// `{"message": {<target>, <the row's payload members>, "android": {<derived>}}}`.
///
/// The row's payload is the message object without its target. pgpush adds only what the
/// row's columns say for Android (`android.priority`, `android.ttl`, `android.collapse_key`)
/// and only where the payload does not set it; `apns` and `webpush` blocks go as written.
package struct FCMMessage: Equatable, Sendable {
    package enum Target: Equatable, Sendable {
        /// A registration token (1–4096 printable ASCII characters, no space).
        case token(String)
        /// A topic name (`[A-Za-z0-9-_.~%]{1,900}`, no `/topics/` prefix).
        case topic(String)
    }

    package let target: Target
    /// The request body, compact JSON.
    package let body: [UInt8]

    /// The payload's members FCM's message object has, besides the target.
    static let payloadMembers: Set<String> = ["notification", "data", "android", "apns", "webpush", "fcm_options"]
    /// The largest payload (compact) for a token and for a topic (FCM's limit for topic messages).
    package static let largestPayload = 4096
    package static let largestTopicPayload = 2048
    /// FCM's longest time to live: 28 days.
    package static let longestTimeToLive = 2_419_200

    /// Builds the send for a row. `timeToLive` is the seconds left until `expires_at`
    /// (nil when the row has none), `deliverOnce` the row's "now or never".
    package init(target: Target, payload: some Collection<UInt8>, priority: Int?, timeToLive: Int?, deliverOnce: Bool,
                collapseID: String?, validateOnly: Bool = false) throws(FCMMessageError) {
        try Self.check(target)
        guard let parsed = JSONValue.parse(payload), case .object(var members) = parsed else {
            throw .payloadNotAnObject
        }
        if let unknown = members.keys.sorted().first(where: { !Self.payloadMembers.contains($0) }) {
            throw .unknownPayloadMember(unknown)
        }
        if let data = members["data"] {
            guard case .object(let values) = data else { throw .dataNotStrings(key: nil) }
            if let key = values.keys.sorted().first(where: { values[$0]?.stringValue == nil }) { throw .dataNotStrings(key: key) }
        }
        let compactSize = parsed.encoded().utf8.count
        let limit = if case .topic = target { Self.largestTopicPayload } else { Self.largestPayload }
        guard compactSize <= limit else { throw .payloadTooLarge(size: compactSize, limit: limit) }

        var android: [String: JSONValue] = [:]
        if let given = members["android"] {
            guard case .object(let fields) = given else { throw .androidNotAnObject }
            android = fields
        }
        func derive(_ key: String, _ value: JSONValue?) {
            if android[key] == nil, let value { android[key] = value }
        }
        derive("priority", priority.map { .string($0 >= 10 ? "HIGH" : "NORMAL") })
        let ttl = deliverOnce ? 0 : timeToLive.map { min(max($0, 0), Self.longestTimeToLive) }
        derive("ttl", ttl.map { .string("\($0)s") })
        derive("collapse_key", collapseID.map(JSONValue.string))
        if !android.isEmpty { members["android"] = .object(android) }

        switch target {
        case .token(let token): members["token"] = .string(token)
        case .topic(let topic): members["topic"] = .string(topic)
        }
        var request: [String: JSONValue] = ["message": .object(members)]
        if validateOnly { request["validate_only"] = .bool(true) }
        self.target = target
        body = Array(JSONValue.object(request).encoded().utf8)
    }

    /// The send's path for `project`.
    package static func path(project: String) -> String {
        "/v1/projects/\(project)/messages:send"
    }

    static func check(_ target: Target) throws(FCMMessageError) {
        switch target {
        case .token(let token):
            guard (1...4096).contains(token.utf8.count), token.isVisibleASCII else {
                throw .invalidToken
            }
        case .topic(let topic):
            guard (1...900).contains(topic.utf8.count), topic.utf8.allSatisfy(isTopicCharacter) else { throw .invalidTopic }
        }
    }

    private static func isTopicCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "-_.~%".utf8.contains(byte)
        }
    }
}

/// Why a row cannot become an FCM message: the row fails with `reason`, no request is made.
package enum FCMMessageError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidToken
    case invalidTopic
    case payloadNotAnObject
    case unknownPayloadMember(String)
    case dataNotStrings(key: String?)
    case androidNotAnObject
    case payloadTooLarge(size: Int, limit: Int)

    /// The row's `last_reason`.
    package var reason: String {
        switch self {
        case .invalidToken: "BadDeviceToken"
        case .invalidTopic: "BadChannelId"
        case .payloadNotAnObject, .unknownPayloadMember, .androidNotAnObject, .dataNotStrings: "InvalidPayload"
        case .payloadTooLarge: "PayloadTooLarge"
        }
    }

    package var description: String {
        switch self {
        case .invalidToken: "an FCM registration token is 1 to 4096 printable ASCII characters without spaces"
        case .invalidTopic: "an FCM topic name is 1 to 900 characters of A-Z, a-z, 0-9 and -_.~%"
        case .payloadNotAnObject: "an FCM payload is a JSON object: the message without its target"
        case .unknownPayloadMember(let name):
            "an FCM payload has only notification, data, android, apns, webpush and fcm_options; it has \"\(name)\""
        case .dataNotStrings(let key):
            key.map { "FCM data values are strings; \"\($0)\" is not" } ?? "FCM data is an object of string values"
        case .androidNotAnObject: "an FCM payload's android member is an object"
        case .payloadTooLarge(let size, let limit): "the payload is \(size) bytes compact; FCM takes at most \(limit) here"
        }
    }
}
