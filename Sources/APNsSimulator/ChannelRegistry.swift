import Foundation
import HTTP2TLS
import PGPushCore

/// The broadcast channels the simulator knows, per bundle id, and the broadcasts each got.
/// Part of `SimulatorState`, under its lock.
struct ChannelRegistry {
    /// Channel id → storage policy, per bundle id.
    private(set) var channels: [String: [String: Int]] = [:]
    /// Deleted ids stay refused for ever: APNs never reissues one.
    private var deleted: Set<String> = []
    let limit: Int
    let broadcastEnabled: Bool

    init(configuration: SimulatorConfiguration) {
        limit = configuration.channelLimit
        broadcastEnabled = configuration.broadcastEnabled
        for (id, policy) in configuration.channels {
            channels[configuration.bundleID ?? "", default: [:]][id] = policy
        }
    }

    /// The storage policy of a live channel, nil when it does not exist.
    private func policy(_ id: String, bundleID: String) -> Int? {
        guard !deleted.contains(id) else { return nil }
        return channels[bundleID]?[id] ?? channels[""]?[id]
    }

    /// The answer to a broadcast whose headers passed: the channel must exist, and a channel
    /// that stores nothing takes only expiration 0.
    func judge(_ broadcast: BroadcastRules.Broadcast, bundleID: String) -> SimulatorAnswer? {
        guard broadcastEnabled else { return SimulatorAnswer(.featureNotEnabled) }
        guard let policy = policy(broadcast.channelID, bundleID: bundleID) else {
            return SimulatorAnswer(.channelNotRegistered)
        }
        if policy == 0, broadcast.expiration != 0 { return SimulatorAnswer(.badExpirationDate) }
        return nil
    }

    /// Carries out a management request whose route and credentials passed.
    mutating func manage(_ route: BroadcastRules.Route, headers: [HeaderField], body: [UInt8]) -> SimulatorAnswer {
        guard broadcastEnabled else { return SimulatorAnswer(.featureNotEnabled) }
        switch route {
        case .broadcast:
            return SimulatorAnswer(.badPath)
        case .allChannels(let bundleID):
            let live = (channels[bundleID] ?? [:]).keys.filter { !deleted.contains($0) }.sorted()
            return SimulatorAnswer.json(status: 200, ["channels": live])
        case .channel(let method, let bundleID):
            if method == "POST" {
                let policy: Int
                switch BroadcastRules.checkCreateBody(body) {
                case .success(let value): policy = value
                case .failure(let answer): return answer
                }
                let live = (channels[bundleID] ?? [:]).keys.filter { !deleted.contains($0) }.count
                guard live < limit else { return SimulatorAnswer(.cannotCreateChannelConfig) }
                var bytes = [UInt8](repeating: 0, count: 16)
                for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255) }
                let id = Data(bytes).base64EncodedString()
                channels[bundleID, default: [:]][id] = policy
                var answer = SimulatorAnswer(status: 201, reason: nil)
                answer.headers = ["apns-channel-id": id]
                return answer
            }
            let id: String
            switch BroadcastRules.checkChannelHeader(headers) {
            case .success(let value): id = value
            case .failure(let answer): return answer
            }
            guard let policy = policy(id, bundleID: bundleID) else { return SimulatorAnswer(.channelNotRegistered) }
            if method == "DELETE" {
                deleted.insert(id)
                return SimulatorAnswer(status: 204, reason: nil)
            }
            return SimulatorAnswer.json(status: 200, ["message-storage-policy": policy, "push-type": "LiveActivity"])
        }
    }
}
