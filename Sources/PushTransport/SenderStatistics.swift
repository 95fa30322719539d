/// Counters of one sender (one app's connections to one service) since it was created, for
/// metrics, logs and tests.
public struct SenderStatistics: Sendable, Equatable {
    /// HTTP/2 requests written or attempted, resends included.
    public var requestsSent = 0
    /// Answers received, by HTTP status.
    public var answersByStatus: [Int: Int] = [:]
    /// Results returned without an answer, by processing kind.
    public var failuresNotProcessed = 0
    public var failuresMayHaveBeenProcessed = 0
    /// Invisible resends (refused, GOAWAY, ExpiredProviderToken, TooManyProviderTokenUpdates).
    public var resends = 0
    /// Credentials renewed after the service refused them (APNs provider tokens re-signed after
    /// 403 ExpiredProviderToken, FCM access tokens exchanged again after a 401).
    public var credentialRenewals = 0
    /// Sends that had to wait for the rate limiter, and for how long in total.
    public var rateLimiterWaits = 0
    public var rateLimiterWaitTime: Duration = .zero
    /// Connections opened successfully, and those that replaced an earlier one.
    public var connectionsOpened = 0
    public var reconnects = 0
    /// Connect attempts that failed (every cause but `protocolError` and `ioError`).
    public var connectFailures = 0
    /// Connect attempts that failed and open connections that ended on a protocol or I/O
    /// error, by cause.
    public var connectionFailuresByCause: [ConnectionFailure.Cause: Int] = [:]
    /// Connections currently taking requests.
    public var liveConnections = 0
    /// Connections whose rate is currently lowered because 429s spread.
    public var throttledConnections = 0

    public init() {}

    public var answers: Int { answersByStatus.values.reduce(0, +) }
}
