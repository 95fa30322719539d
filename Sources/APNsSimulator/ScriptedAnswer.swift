import APNsCore
import Foundation
import PGPushCore

/// One injected answer: an HTTP status with its reason, or a transport fault.
///
/// Written in fault files and flags as a status (`503`, reason `ServiceUnavailable`),
/// a reason name (`TooManyRequests`, status from the reason catalogue), `refuse`
/// (RST_STREAM REFUSED_STREAM: not processed) or `drop` (the connection closes
/// without an answer: outcome unknown to the client).
package enum ScriptedAnswer: Sendable, Equatable, Codable, CustomStringConvertible {
    case answer(SimulatorAnswer)
    case refuse
    case drop

    package init(parsing text: String) throws(FaultPlanError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        switch trimmed.lowercased() {
        case "refuse": self = .refuse
        case "drop": self = .drop
        default:
            if let status = Int(trimmed), (200...599).contains(status) {
                self = .answer(.typical(forStatus: status))
            } else if let reason = APNsReason(rawValue: trimmed) {
                self = .answer(SimulatorAnswer(reason))
            } else {
                throw .invalidAnswer(text)
            }
        }
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let status = try? container.decode(Int.self) {
            self = try Self(parsing: String(status))
        } else {
            self = try Self(parsing: container.decode(String.self))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    package var description: String {
        switch self {
        case .answer(let answer): answer.reason ?? String(answer.status)
        case .refuse: "refuse"
        case .drop: "drop"
        }
    }
}
