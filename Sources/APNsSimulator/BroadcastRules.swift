import APNsCore
import Foundation
import HTTP2TLS
import PGPushCore

/// Apple's rules for Live Activity broadcasts (`POST /4/broadcasts/apps/<bundle id>`) and
/// for the channel management API (`/1/apps/<bundle id>/channels` and `/all-channels`),
/// as pure functions. APNs serves the management API on hosts and ports of its own; the
/// simulator serves both on its one listener and tells them apart by path.
package enum BroadcastRules {
    package static let broadcastPathPrefix = "/4/broadcasts/apps/"
    package static let managementPathPrefix = "/1/apps/"
    /// Largest broadcast body APNs accepts.
    package static let payloadLimit = Payload.broadcastLimit

    /// The routes this file answers; nil for any other path (the device endpoint's).
    package enum Route: Equatable, Sendable {
        case broadcast(bundleID: String)
        /// create (POST), read (GET) or delete (DELETE) one channel.
        case channel(method: String, bundleID: String)
        /// list every channel (GET).
        case allChannels(bundleID: String)
    }

    package static func route(method: String, path: String) -> Result<Route, SimulatorAnswer>? {
        // Device pushes, nearly every request, leave at once and allocate nothing.
        guard path.hasPrefix(broadcastPathPrefix) || path.hasPrefix(managementPathPrefix) else { return nil }
        let pathOnly = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
        if pathOnly.hasPrefix(broadcastPathPrefix) {
            let bundleID = String(pathOnly.dropFirst(broadcastPathPrefix.count))
            guard !bundleID.isEmpty, !bundleID.contains("/") else { return .failure(SimulatorAnswer(.badPath)) }
            guard method == "POST" else { return .failure(SimulatorAnswer(.methodNotAllowed)) }
            return .success(.broadcast(bundleID: bundleID))
        }
        guard pathOnly.hasPrefix(managementPathPrefix) else { return nil }
        let parts = pathOnly.dropFirst(managementPathPrefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty else { return .failure(SimulatorAnswer(.badPath)) }
        let bundleID = String(parts[0])
        switch (parts[1], method) {
        case ("channels", "POST"), ("channels", "GET"), ("channels", "DELETE"):
            return .success(.channel(method: method, bundleID: bundleID))
        case ("all-channels", "GET"):
            return .success(.allChannels(bundleID: bundleID))
        case ("channels", _), ("all-channels", _):
            return .failure(SimulatorAnswer(.methodNotAllowed))
        default:
            return .failure(SimulatorAnswer(.badPath))
        }
    }

    /// What a broadcast that passed the route and credentials asks for.
    package struct Broadcast: Equatable, Sendable {
        package var channelID: String
        package var expiration: Int64
    }

    /// Headers and body of a broadcast, in the order APNs reports them: channel, push type,
    /// priority, expiration, payload. Whether the channel exists is the registry's to say.
    package static func checkBroadcast(headers: [HeaderField], body: [UInt8]) -> Result<Broadcast, SimulatorAnswer> {
        let channelID: String
        switch checkChannelHeader(headers) {
        case .success(let id): channelID = id
        case .failure(let answer): return .failure(answer)
        }
        guard let pushType = headers.value(of: "apns-push-type") else { return .failure(SimulatorAnswer(.missingPushType)) }
        guard pushType.lowercased() == PushType.liveactivity.rawValue else { return .failure(SimulatorAnswer(.invalidPushType)) }
        guard let priority = headers.value(of: "apns-priority").flatMap(Int.init), [5, 10].contains(priority) else {
            return .failure(SimulatorAnswer(.badPriority))
        }
        guard let text = headers.value(of: "apns-expiration"), let expiration = Int64(text), expiration >= 0,
              text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return .failure(SimulatorAnswer(.badExpirationDate))
        }
        if let requestID = headers.value(of: "apns-request-id"), !RequestRules.isCanonicalUUID(requestID) {
            return .failure(SimulatorAnswer(.badMessageID))
        }
        if body.isEmpty { return .failure(SimulatorAnswer(.payloadEmpty)) }
        if body.count > payloadLimit { return .failure(SimulatorAnswer(.payloadTooLarge)) }
        return .success(Broadcast(channelID: channelID, expiration: expiration))
    }

    /// The `apns-channel-id` header: present, and base64.
    package static func checkChannelHeader(_ headers: [HeaderField]) -> Result<String, SimulatorAnswer> {
        guard let channelID = headers.value(of: "apns-channel-id"), !channelID.isEmpty else {
            return .failure(SimulatorAnswer(.missingChannelID))
        }
        guard let decoded = Data(base64Encoded: channelID), !decoded.isEmpty else {
            return .failure(SimulatorAnswer(.badChannelID))
        }
        return .success(channelID)
    }

    /// The body of a create request: `{"message-storage-policy": 0 or 1, "push-type": "LiveActivity"}`.
    package static func checkCreateBody(_ body: [UInt8]) -> Result<Int, SimulatorAnswer> {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return .failure(SimulatorAnswer(.badRequestPayload))
        }
        let known: Set<String> = ["message-storage-policy", "push-type"]
        guard Set(object.keys).isSubset(of: known) else { return .failure(SimulatorAnswer(.badRequestParams)) }
        guard let pushType = object["push-type"] as? String else { return .failure(SimulatorAnswer(.missingPushType)) }
        guard pushType.lowercased() == "liveactivity" else { return .failure(SimulatorAnswer(.invalidPushType)) }
        guard let policy = object["message-storage-policy"] as? Int, [0, 1].contains(policy) else {
            return .failure(SimulatorAnswer(.badRequestParams))
        }
        return .success(policy)
    }
}
