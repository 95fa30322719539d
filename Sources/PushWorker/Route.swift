import PGPushCore

/// One app's sending to one service: what the worker claims, sends and pauses for. An app
/// with credentials for two services has two routes, each with its own claim loop, sender
/// and health.
struct Route: Hashable, Sendable, CustomStringConvertible {
    let app: String
    let service: Service

    var description: String { "\(app)/\(service.rawValue)" }
}
