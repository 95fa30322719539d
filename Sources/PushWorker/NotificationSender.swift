import APNsClient
import PGPushCore

/// What the worker needs from an APNs client: send one request, learn what
/// happened. `APNsClient` is the real one; the seam keeps the worker's
/// orchestration readable apart from HTTP/2 details.
public protocol NotificationSender: Sendable {
    func send(_ request: APNsRequest) async -> DeliveryResult
    /// Requests per second all connections together may send (claim sizing); nil when uncapped.
    var requestsPerSecond: Int? { get }
    /// How many connections the sender keeps (claim sizing).
    var connections: Int { get }
    /// How the app authenticates (which headers and push types are allowed).
    var authenticationMethod: AuthenticationMethod { get }
    var statistics: APNsClientStatistics { get }
    /// `observer` hears of every failure to connect and every connection ended by a protocol or I/O error.
    func onConnectionFailure(_ observer: @escaping @Sendable (APNsConnectionFailure) -> Void)
    func shutdown() async
}

extension APNsClient: NotificationSender {
    public var requestsPerSecond: Int? {
        configuration.effectiveRatePerConnection.map { $0 * configuration.connections }
    }

    public var connections: Int { configuration.connections }

    public var authenticationMethod: AuthenticationMethod { configuration.authentication.method }

    public func shutdown() async {
        await shutdown(timeout: .seconds(10))
    }
}
