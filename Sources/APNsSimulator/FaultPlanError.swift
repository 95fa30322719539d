/// A fault plan (file or flags) that cannot be used; names the offending setting.
public enum FaultPlanError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidAnswer(String)
    case invalidProbability(String)
    case invalidSetting(String)
    case unreadableFile(path: String, detail: String)

    public var description: String {
        switch self {
        case .invalidAnswer(let text):
            "\"\(text)\" is not an answer: use a status (503), an APNs reason (TooManyRequests), refuse or drop"
        case .invalidProbability(let text): "invalid probability: \(text)"
        case .invalidSetting(let text): text
        case .unreadableFile(let path, let detail): "cannot read fault file \(path): \(detail)"
        }
    }
}
