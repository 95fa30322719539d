import PGPushCore

/// A request that passed every rule: what the simulator then answers and reports.
public struct AcceptedRequest: Sendable, Equatable {
    /// Lowercase hex.
    public var deviceToken: String
    public var pushType: PushType
    public var priority: APNsPriority
    public var topic: String
    /// As the client sent it; nil when absent (the simulator then makes one up).
    public var apnsID: String?
    public var expiration: Int64?
    public var collapseID: String?
}
