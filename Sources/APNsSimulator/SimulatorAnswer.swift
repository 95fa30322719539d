import APNsCore
import Foundation
import PGPushCore

/// The HTTP answer the simulator gives to one request: a status, and for errors the
/// JSON reason (plus the invalidation time on a 410), as APNs sends them.
/// A refusal is also the failure value of the rule checks, hence `Error`.
package struct SimulatorAnswer: Error, Sendable, Equatable, CustomStringConvertible {
    package var status: Int
    /// nil on 200; otherwise usually an `APNsReason` raw value.
    package var reason: String?
    /// Sent only with 410, in milliseconds since the epoch.
    package var timestamp: Date?
    /// Headers of a successful management answer (`apns-channel-id` of a new channel).
    package var headers: [String: String] = [:]
    /// A JSON body of a successful management answer (a channel, the list of channels).
    package var content: [UInt8]?

    package init(status: Int, reason: String?, timestamp: Date? = nil) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
    }

    package init(_ reason: APNsReason, timestamp: Date? = nil) {
        self.init(status: reason.status, reason: reason.rawValue, timestamp: timestamp)
    }

    package static let accepted = SimulatorAnswer(status: 200, reason: nil)

    /// A success carrying a JSON body.
    static func json(status: Int, _ object: [String: Any]) -> SimulatorAnswer {
        var answer = SimulatorAnswer(status: status, reason: nil)
        answer.content = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map { Array($0) } ?? []
        return answer
    }

    /// The reason APNs gives with a bare status, for fault scripts that name only a status.
    package static func typical(forStatus status: Int) -> SimulatorAnswer {
        switch status {
        case 200: return .accepted
        case 400: return SimulatorAnswer(.badDeviceToken)
        case 403: return SimulatorAnswer(.invalidProviderToken)
        case 404: return SimulatorAnswer(.badPath)
        case 405: return SimulatorAnswer(.methodNotAllowed)
        case 410: return SimulatorAnswer(.unregistered)
        case 413: return SimulatorAnswer(.payloadTooLarge)
        case 429: return SimulatorAnswer(.tooManyRequests)
        case 500: return SimulatorAnswer(.internalServerError)
        case 503: return SimulatorAnswer(.serviceUnavailable)
        default: return SimulatorAnswer(status: status, reason: nil)
        }
    }

    /// The response body: empty on success, else `{"reason":…}` (and `"timestamp"` on 410).
    package var body: [UInt8] {
        if let content { return content }
        if (200..<300).contains(status) && reason == nil { return [] }
        return APNsErrorBody(reason: reason, timestamp: status == 410 ? timestamp : nil).encoded()
    }

    package var description: String {
        reason.map { "\(status) \($0)" } ?? "\(status)"
    }
}
