/// Why an application's VAPID setting or token cannot be used.
package enum VAPIDError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidSubject(String)
    case signingFailed(String)

    package var description: String {
        switch self {
        case .invalidSubject(let why): "vapid_subject: \(why)"
        case .signingFailed(let detail): "VAPID token signing failed: \(detail)"
        }
    }
}
