import Foundation
import PGPushCore

extension PushNotification {
    /// Largest `apns-collapse-id` APNs accepts, in UTF-8 bytes.
    package static let maximumCollapseIDLength = 64
    /// Longest channel id taken. Apple fixes no length; this keeps a bad row from making a huge header.
    package static let maximumChannelIDLength = 1024

    /// Applies every rule APNs would check and returns the
    /// request to send.
    ///
    /// Topic: an explicit topic is used exactly as given, even without the push
    /// type's suffix — it is the caller's override (certificate topics, MDM UIDs,
    /// apps whose topic differs from the configured bundle id), and APNs is the
    /// authority on whether it fits. Without one, the topic is `bundleID` plus the
    /// push type's suffix.
    ///
    /// A channel row (`channelID`) becomes a broadcast: push type liveactivity only, its
    /// topic (the row's, else `bundleID`) is the bundle id in the path, no collapse id, and
    /// `apns-expiration` always present, as APNs requires: 0 when the row is delivered
    /// once (a channel that stores no messages takes only 0, and the claim marks its rows
    /// so), else the row's expiration, else 0 (try once) when the row has none.
    /// Certificate connections may broadcast.
    ///
    /// - Parameters:
    ///   - bundleID: the app's bundle id; nil when the app configures none.
    ///   - authentication: how the app connects; location and liveactivity need token auth.
    package func validated(bundleID: String?, authentication: AuthenticationMethod) throws(ValidationFailure) -> APNsRequest {
        guard let type = PushType(rawValue: pushType) else {
            throw ValidationFailure(.invalidPushType, "unknown push type \"\(pushType.prefix(40))\"")
        }
        if let channelID { return try broadcast(channelID: channelID, type: type, bundleID: bundleID) }
        let token = try DeviceToken(validating: deviceToken)
        let resolvedPriority = try Self.priority(priority, for: type)
        let resolvedTopic = try Self.topic(explicit: topic, bundleID: bundleID, for: type)
        if type.requiresTokenAuthentication, authentication != .token {
            throw ValidationFailure(.tokenAuthenticationRequired,
                "\(type.rawValue) pushes need token authentication; this app uses a certificate")
        }
        if let collapseID { try Self.checkCollapseID(collapseID) }
        if let expiration, expiration < 0 {
            throw ValidationFailure(.badExpirationDate, "expiration must be absolute UNIX seconds (0 or more), got \(expiration)")
        }
        let body = try Payload(validating: payload, for: type)
        if type == .pushtotalk, resolvedPriority != .immediate, !body.isPushToTalkServiceUpdate {
            throw ValidationFailure(.badPriority,
                "pushtotalk pushes use priority 10; only a service update (aps.ptt-push-type \"service-update\") may use 5")
        }
        // "Try once, store nothing" wins over `expires_at`: APNs must not hold the push,
        // while the row's own deadline still ends it in the queue.
        let onlyOnce = deliverOnce ?? type.deliversOnceByDefault
        return APNsRequest(
            notificationID: id, recipient: .device(token), pushType: type, priority: resolvedPriority, topic: resolvedTopic,
            topicIsExplicit: topic != nil, apnsID: apnsID, expiration: onlyOnce ? 0 : expiration, collapseID: collapseID, body: body.bytes)
    }

    private func broadcast(channelID: String, type: PushType, bundleID: String?) throws(ValidationFailure) -> APNsRequest {
        guard type == .liveactivity else {
            throw ValidationFailure(.invalidPushType, "a channel row must be a liveactivity push, got \(type.rawValue)")
        }
        try Self.checkChannelID(channelID)
        if collapseID != nil {
            throw ValidationFailure(.badCollapseID, "a broadcast carries no collapse id")
        }
        let resolvedPriority = try Self.priority(priority, for: type)
        // The path names the plain bundle id: the type's topic rule does not apply.
        let resolvedTopic = try Self.topic(explicit: topic ?? bundleID, bundleID: nil, for: .alert)
        if let expiration, expiration < 0 {
            throw ValidationFailure(.badExpirationDate, "expiration must be absolute UNIX seconds (0 or more), got \(expiration)")
        }
        let body = try Payload(validating: payload, for: type, broadcast: true)
        return APNsRequest(
            notificationID: id, recipient: .channel(channelID), pushType: type, priority: resolvedPriority,
            topic: resolvedTopic, topicIsExplicit: topic != nil, apnsID: apnsID, expiration: deliverOnce == true ? 0 : (expiration ?? 0), collapseID: nil,
            body: body.bytes)
    }

    /// Base64 as APNs gives channel ids: letters, digits, '+', '/', then at most two '='.
    private static func checkChannelID(_ channelID: String) throws(ValidationFailure) {
        let bytes = Array(channelID.utf8)
        let padding = bytes.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        let body = bytes.dropLast(padding)
        let alphabet = { (byte: UInt8) in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
        }
        guard !body.isEmpty, body.count <= maximumChannelIDLength, padding <= 2, body.allSatisfy(alphabet) else {
            throw ValidationFailure(.badChannelID,
                "channel id must be 1 to \(maximumChannelIDLength) base64 characters (A-Z a-z 0-9 + /, then up to two =)")
        }
    }

    private static func priority(_ requested: Int?, for type: PushType) throws(ValidationFailure) -> APNsPriority {
        guard let requested else { return type.defaultPriority }
        guard let priority = APNsPriority(rawValue: requested) else {
            throw ValidationFailure(.badPriority, "priority must be 10, 5 or 1, got \(requested)")
        }
        guard type.allowedPriorities.contains(priority) else {
            let allowed = type.allowedPriorities.map(\.headerValue).joined(separator: " or ")
            throw ValidationFailure(.badPriority, "\(type.rawValue) pushes allow priority \(allowed), got \(requested)")
        }
        return priority
    }

    private static func topic(explicit: String?, bundleID: String?, for type: PushType) throws(ValidationFailure) -> String {
        let topic: String
        if let explicit {
            topic = explicit
        } else if let bundleID, let derived = type.derivedTopic(bundleID: bundleID) {
            topic = derived
        } else if type.topicRule == .explicitOnly {
            throw ValidationFailure(.missingTopic, "\(type.rawValue) pushes need an explicit topic")
        } else {
            throw ValidationFailure(.missingTopic, "no topic given and the app has no bundle id to derive one")
        }
        // A bundle id is letters, digits, '-' and '.'; MDM topics add a few more.
        // Visible ASCII keeps every real topic and rules out header injection;
        // 255 bytes is far above any bundle id and keeps a bad row from making a huge header.
        guard !topic.isEmpty, topic.utf8.count <= 255, topic.isVisibleASCII else {
            throw ValidationFailure(.badTopic, "topic must be 1 to 255 visible ASCII characters")
        }
        return topic
    }

    private static func checkCollapseID(_ collapseID: String) throws(ValidationFailure) {
        let length = collapseID.utf8.count
        guard length >= 1, length <= maximumCollapseIDLength else {
            throw ValidationFailure(.badCollapseID,
                "collapse id must be 1 to \(maximumCollapseIDLength) bytes of UTF-8, got \(length)")
        }
        // Control characters cannot travel in an HTTP/2 header value.
        guard !collapseID.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw ValidationFailure(.badCollapseID, "collapse id must not contain control characters")
        }
    }
}
