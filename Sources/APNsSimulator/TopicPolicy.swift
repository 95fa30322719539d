import APNsCore
import PGPushCore

/// Which `apns-topic` values a connection may use.
///
/// Judgement calls, since Apple does not say which reason each mismatch gets:
/// a topic of another app is 400 DeviceTokenNotForTopic (the token belongs to the
/// configured app); the app's own topic with the wrong suffix for the push type is
/// 400 BadTopic; on a certificate connection a topic the certificate does not cover,
/// or a token-only push type, is 400 TopicDisallowed.
package enum TopicPolicy: Sendable, Equatable {
    /// Token authentication: `apns-topic` is required. With a bundle id it must be
    /// the bundle id plus the push type's suffix; without one any topic is accepted.
    case token(bundleID: String?)
    /// Certificate authentication: the topic defaults to the certificate's, which covers
    /// the app, its `.voip` and its `.complication` topics.
    case certificate(certificateTopic: String?, bundleID: String?)

    /// Push types whose topic a push certificate carries besides the app itself.
    static let certificateSuffixes: Set<String> = ["", ".voip", ".complication"]

    func resolve(_ header: String?, pushType: PushType) -> Result<String, SimulatorAnswer> {
        switch self {
        case .token(let bundleID):
            guard let header, !header.isEmpty else { return .failure(SimulatorAnswer(.missingTopic)) }
            guard let bundleID else { return .success(header) }
            return Self.match(header, bundleID: bundleID, pushType: pushType)

        case .certificate(let certificateTopic, let bundleID):
            if pushType.requiresTokenAuthentication { return .failure(SimulatorAnswer(.topicDisallowed)) }
            guard let base = certificateTopic ?? bundleID else {
                guard let header, !header.isEmpty else { return .failure(SimulatorAnswer(.missingTopic)) }
                return .success(header)
            }
            if let bundleID, base != bundleID { return .failure(SimulatorAnswer(.deviceTokenNotForTopic)) }
            let topic = (header?.isEmpty ?? true) ? (pushType.derivedTopic(bundleID: base) ?? base) : (header ?? base)
            let covered = Self.certificateSuffixes.contains { topic == base + $0 }
            guard covered else {
                return .failure(SimulatorAnswer(topic.hasPrefix(base) ? .topicDisallowed : .deviceTokenNotForTopic))
            }
            return Self.match(topic, bundleID: base, pushType: pushType)
        }
    }

    /// Whether the connection may broadcast to, or manage the channels of, `bundleID`
    /// (the bundle id in the path): 403 TopicMismatch when the configured app or the
    /// certificate's topic is another one.
    func covers(bundleID: String) -> SimulatorAnswer? {
        switch self {
        case .token(let configured):
            return configured.map { $0 == bundleID } ?? true ? nil : SimulatorAnswer(.topicMismatch)
        case .certificate(let certificateTopic, let configured):
            return (certificateTopic ?? configured).map { $0 == bundleID } ?? true ? nil : SimulatorAnswer(.topicMismatch)
        }
    }

    private static func match(_ topic: String, bundleID: String, pushType: PushType) -> Result<String, SimulatorAnswer> {
        guard let expected = pushType.derivedTopic(bundleID: bundleID) else { return .success(topic) }  // mdm: any topic
        if topic == expected { return .success(topic) }
        let ownTopics = PushType.allCases.compactMap { $0.derivedTopic(bundleID: bundleID) }
        return .failure(SimulatorAnswer(ownTopics.contains(topic) ? .badTopic : .deviceTokenNotForTopic))
    }
}
