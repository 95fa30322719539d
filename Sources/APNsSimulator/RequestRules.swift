import APNsCore
import Foundation
import HTTP2TLS
import PGPushCore

/// The request rules of APNs' `/3/device` endpoint, as pure
/// functions: route first (405, 404, 400 MissingDeviceToken), then — after the caller
/// has checked authentication — headers, device token and payload. The per-type
/// facts (topic suffixes, priorities, payload limits) come from `PushType`.
package enum RequestRules {
    package static let devicePathPrefix = "/3/device/"
    package static let maximumCollapseIDBytes = 64

    /// The raw token text from `:path`, or the answer for a wrong method or path.
    package static func checkRoute(method: String, path: String) -> Result<String, SimulatorAnswer> {
        guard method == "POST" else { return .failure(SimulatorAnswer(.methodNotAllowed)) }
        let pathOnly = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
        if pathOnly == "/3/device" || pathOnly == devicePathPrefix { return .failure(SimulatorAnswer(.missingDeviceToken)) }
        guard pathOnly.hasPrefix(devicePathPrefix) else { return .failure(SimulatorAnswer(.badPath)) }
        let token = String(pathOnly.dropFirst(devicePathPrefix.count))
        guard !token.contains("/") else { return .failure(SimulatorAnswer(.badPath)) }
        return .success(token)
    }

    /// Checks headers, token and payload of a request whose route and credentials passed.
    package static func checkContent(rawToken: String, headers: [HeaderField], body: [UInt8],
                                    topics: TopicPolicy) -> Result<AcceptedRequest, SimulatorAnswer> {
        var seen = Set<String>()
        for field in headers {
            guard seen.insert(field.name.lowercased()).inserted else { return .failure(SimulatorAnswer(.duplicateHeaders)) }
        }

        let pushType: PushType
        if let text = headers.value(of: "apns-push-type") {
            guard let parsed = PushType(rawValue: text) else { return .failure(SimulatorAnswer(.invalidPushType)) }
            pushType = parsed
        } else {
            pushType = .alert  // APNs infers the type when the header is absent
        }

        let apnsID = headers.value(of: "apns-id")
        if let apnsID, !isCanonicalUUID(apnsID) { return .failure(SimulatorAnswer(.badMessageID)) }

        var expiration: Int64?
        if let text = headers.value(of: "apns-expiration") {
            guard let value = Int64(text), value >= 0, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                return .failure(SimulatorAnswer(.badExpirationDate))
            }
            expiration = value
        }

        let priority: APNsPriority
        if let text = headers.value(of: "apns-priority") {
            guard let value = Int(text), let parsed = APNsPriority(rawValue: value),
                  pushType.allowedPriorities.contains(parsed) else { return .failure(SimulatorAnswer(.badPriority)) }
            priority = parsed
        } else {
            priority = pushType.defaultPriority
        }

        let collapseID = headers.value(of: "apns-collapse-id")
        if let collapseID, collapseID.utf8.count > maximumCollapseIDBytes { return .failure(SimulatorAnswer(.badCollapseID)) }

        let topic: String
        switch topics.resolve(headers.value(of: "apns-topic"), pushType: pushType) {
        case .success(let resolved): topic = resolved
        case .failure(let answer): return .failure(answer)
        }

        let deviceToken: DeviceToken
        do { deviceToken = try DeviceToken(validating: rawToken) } catch { return .failure(SimulatorAnswer(.badDeviceToken)) }

        if body.isEmpty { return .failure(SimulatorAnswer(.payloadEmpty)) }
        if body.count > pushType.payloadLimit { return .failure(SimulatorAnswer(.payloadTooLarge)) }

        return .success(AcceptedRequest(deviceToken: deviceToken.hex, pushType: pushType, priority: priority, topic: topic,
                                        apnsID: apnsID, expiration: expiration, collapseID: collapseID))
    }

    /// 8-4-4-4-12 hex digits (APNs documents lowercase; either case is accepted here).
    package static func isCanonicalUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                let isHex = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) || (byte >= 0x41 && byte <= 0x46)
                guard isHex else { return false }
            }
        }
        return true
    }
}

/// A request that passed every rule: what the simulator then answers and reports.
package struct AcceptedRequest: Sendable, Equatable {
    /// Lowercase hex.
    package var deviceToken: String
    package var pushType: PushType
    package var priority: APNsPriority
    package var topic: String
    /// As the client sent it; nil when absent (the simulator then makes one up).
    package var apnsID: String?
    package var expiration: Int64?
    package var collapseID: String?
}

/// What the server glue must do for one request, decided under the simulator's lock
/// and carried out after it is released.
struct SimulatorDecision: Sendable {
    enum Step: Sendable {
        case respond(status: Int, headers: [HeaderField], body: [UInt8], after: Duration)
        case refuse
        case drop
        /// Nothing for the stream itself: the GOAWAY sent with this decision leaves it out,
        /// which tells the client it was not processed.
        case leaveToGoAway
    }

    /// A GOAWAY (NO_ERROR) to send before the step.
    struct GoAway: Sendable, Equatable {
        var lastStreamID: Int32
        /// Sent as the debug data `{"reason":…}`, as APNs does.
        var reason: String
    }

    var step: Step
    var goAway: GoAway?
    /// The connection has just authenticated: raise its stream limit first.
    var raiseStreamLimit = false
    var logEntry: RequestLogEntry?
}
