import PGPushCore

/// The `apns-push-type` values and the per-type rules pgpush enforces before
/// spending an APNs request.
///
/// - Topic: APNs expects `<bundle id><suffix>`; `mdm` uses the UID from the MDM
///   certificate, which no bundle id can produce, so it needs an explicit topic.
/// - Priorities: a background push may only use 5 ("10 is an error"); Live Activity
///   and location pushes 10 or 5 (ActivityKit and the location push service name
///   only those); push to talk 10, or 5 for a service update (see `Payload`); every
///   other type accepts 10, 5 and 1.
/// - Deliver once: push to talk is sent with `apns-expiration: 0`, which Apple
///   requires so that a late audio push is never delivered.
/// - Default priority: 10, which is what APNs itself assumes when the header is
///   omitted, so a row without a priority behaves as if sent by a client that omits
///   it — except background, where 10 is forbidden and 5 is the only choice.
///   (For alert, voip, location and pushtotalk "the user or an answer is waiting"
///   is the documented reason for 10; liveactivity 10 counts toward its budget,
///   which the sender opts out of by writing 5.)
/// - Payload limit: 4096 bytes of compact JSON, 5120 for voip.
/// - Authentication: location and liveactivity work with token auth only.
package enum PushType: String, CaseIterable, Sendable {
    case alert
    case background
    case voip
    case complication
    case fileprovider
    case mdm
    case location
    case liveactivity
    case pushtotalk
    case widgets
    case controls

    /// What `apns-topic` must be for this type when the row gives none.
    package enum TopicRule: Equatable, Sendable {
        /// The app's bundle id followed by `suffix` (empty for alert and background).
        case bundleID(suffix: String)
        /// No topic can be derived; the notification must carry one (mdm).
        case explicitOnly
    }

    package var topicRule: TopicRule {
        switch self {
        case .alert, .background: .bundleID(suffix: "")
        case .voip: .bundleID(suffix: ".voip")
        case .complication: .bundleID(suffix: ".complication")
        case .fileprovider: .bundleID(suffix: ".pushkit.fileprovider")
        case .mdm: .explicitOnly
        case .location: .bundleID(suffix: ".location-query")
        case .liveactivity: .bundleID(suffix: ".push-type.liveactivity")
        case .pushtotalk: .bundleID(suffix: ".voip-ptt")
        case .widgets: .bundleID(suffix: ".push-type.widgets")
        case .controls: .bundleID(suffix: ".push-type.controls")
        }
    }

    /// The topic derived from a bundle id, or nil when this type cannot derive one.
    package func derivedTopic(bundleID: String) -> String? {
        switch topicRule {
        case .bundleID(let suffix): suffix.isEmpty ? bundleID : bundleID + suffix
        case .explicitOnly: nil
        }
    }

    /// Priorities APNs accepts for this type, highest first.
    package var allowedPriorities: [APNsPriority] {
        switch self {
        case .background: [.powerAware]
        case .liveactivity, .location, .pushtotalk: [.immediate, .powerAware]
        default: [.immediate, .powerAware, .powerFirst]
        }
    }

    /// The priority sent when the notification does not name one.
    package var defaultPriority: APNsPriority {
        switch self {
        case .background: .powerAware
        default: .immediate
        }
    }

    /// Largest compact JSON body APNs accepts for this type, in bytes.
    package var payloadLimit: Int {
        switch self {
        case .voip: 5120
        default: 4096
        }
    }

    /// Whether a row that leaves `deliver_once` null is sent with `apns-expiration: 0`.
    package var deliversOnceByDefault: Bool { self == .pushtotalk }

    /// Whether APNs accepts this type only on a token-authenticated (JWT) connection.
    package var requiresTokenAuthentication: Bool {
        switch self {
        case .location, .liveactivity: true
        default: false
        }
    }
}
