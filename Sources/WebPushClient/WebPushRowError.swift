/// Why a Web Push row cannot become a request: it fails with the reason, and no connection
/// is made for it.
package enum WebPushRowError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The endpoint is not an https URL of an allowed origin (`EndpointRefusal`).
    case endpointNotAllowed(String)
    case invalidSubscription(String)
    case payloadTooLarge(size: Int, limit: Int)
    case invalidTopic(String)
    /// The payload is not JSON (a jsonb column always is; read defensively).
    case invalidPayload(String)
    /// The keys do not work for encryption (a p256dh that is not on the curve).
    case encryption(String)

    /// The `last_reason` a row gets.
    package var reason: String {
        switch self {
        case .endpointNotAllowed: EndpointRefusal.reason
        case .invalidSubscription, .encryption: "InvalidSubscription"
        case .payloadTooLarge: "PayloadTooLarge"
        case .invalidTopic: "InvalidTopic"
        case .invalidPayload: "InvalidPayload"
        }
    }

    package var description: String {
        switch self {
        case .endpointNotAllowed(let detail): "\(reason): \(detail)"
        case .invalidSubscription(let detail): "\(reason): \(detail)"
        case .payloadTooLarge(let size, let limit): "\(reason): \(size) bytes of compact JSON; Web Push carries at most \(limit)"
        case .invalidTopic(let detail): "\(reason): \(detail)"
        case .invalidPayload(let detail): "\(reason): \(detail)"
        case .encryption(let detail): "\(reason): \(detail)"
        }
    }
}
