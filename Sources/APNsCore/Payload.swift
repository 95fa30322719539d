import PGPushCore

/// A notification body ready to send: valid JSON, a top-level object, compact,
/// within its push type's size limit.
///
/// - Compact means no insignificant whitespace; strings and numbers stay exactly
///   as written, so the size APNs measures is the size checked here.
/// - A background push must carry `"aps": {"content-available": 1}` and no
///   `alert`, `badge` or `sound` ("send no alert, badge or sound
///   with it"). Such a push is rejected rather than silently sent, because APNs
///   may accept it and then throttle or drop it on the device (docs/apns.md, "Payload limits").
package struct Payload: Equatable, Sendable {
    /// The compact UTF-8 JSON body.
    package let bytes: [UInt8]
    /// A push-to-talk service update (`"aps": {"ptt-push-type": "service-update"}`),
    /// the one kind of push to talk that may go at priority 5.
    package let isPushToTalkServiceUpdate: Bool

    /// Largest compact JSON body APNs accepts for a broadcast, in bytes.
    package static let broadcastLimit = 5120

    /// - Parameter broadcast: the body goes to a channel (its own size limit; no Live Activity start).
    package init(validating text: some Collection<UInt8>, for pushType: PushType, broadcast: Bool = false) throws(ValidationFailure) {
        let isBackground = pushType == .background
        let scanned: JSONScanner.Result
        do {
            scanned = try JSONScanner.scan(text, compacting: true,
                                           buildingValue: isBackground || pushType == .pushtotalk || pushType == .liveactivity)
        } catch {
            throw ValidationFailure(.invalidPayload, "payload is not valid JSON: \(error)")
        }
        guard scanned.compact.first == UInt8(ascii: "{") else {
            throw ValidationFailure(.invalidPayload, "payload must be a JSON object")
        }
        let limit = broadcast ? Self.broadcastLimit : pushType.payloadLimit
        guard scanned.compact.count <= limit else {
            throw ValidationFailure(.payloadTooLarge,
                "payload is \(scanned.compact.count) bytes compact; \(broadcast ? "a broadcast" : pushType.rawValue) allows \(limit)")
        }
        if isBackground, let root = scanned.value {
            try Self.checkBackground(root)
        }
        if pushType == .liveactivity, let root = scanned.value {
            try LiveActivityPayload.check(root, broadcast: broadcast)
        }
        bytes = scanned.compact
        isPushToTalkServiceUpdate = pushType == .pushtotalk
            && scanned.value?["aps"]?["ptt-push-type"]?.stringValue == "service-update"
    }

    private static func checkBackground(_ root: JSONValue) throws(ValidationFailure) {
        guard let aps = root["aps"], case .object = aps else {
            throw ValidationFailure(.badBackgroundPayload, #"a background push needs "aps": {"content-available": 1}"#)
        }
        guard aps["content-available"]?.numberValue == 1 else {
            throw ValidationFailure(.badBackgroundPayload, #"a background push needs "content-available": 1 in "aps""#)
        }
        let forbidden = ["alert", "badge", "sound"].filter { aps[$0] != nil }
        guard forbidden.isEmpty else {
            throw ValidationFailure(.badBackgroundPayload,
                "a background push must not carry \(forbidden.joined(separator: ", ")) in \"aps\"")
        }
    }
}
