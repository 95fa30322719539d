/// Counters of one sender (one app's connections to one service) since it was created, for
/// metrics, logs and tests.
package struct SenderStatistics: Sendable, Equatable {
    /// HTTP/2 requests written or attempted, resends included.
    package var requestsSent = 0
    /// Answers received, by HTTP status.
    package var answersByStatus: [Int: Int] = [:]
    /// Results returned without an answer, by processing kind.
    package var failuresNotProcessed = 0
    package var failuresMayHaveBeenProcessed = 0
    /// Invisible resends (refused, GOAWAY, ExpiredProviderToken, TooManyProviderTokenUpdates).
    package var resends = 0
    /// Credentials renewed after the service refused them (APNs provider tokens re-signed after
    /// 403 ExpiredProviderToken, FCM access tokens exchanged again after a 401).
    package var credentialRenewals = 0
    /// Sends that had to wait for the rate limiter, and for how long in total.
    package var rateLimiterWaits = 0
    package var rateLimiterWaitTime: Duration = .zero
    /// Connections opened successfully, and those that replaced an earlier one.
    package var connectionsOpened = 0
    package var reconnects = 0
    /// Connect attempts that failed (every cause but `protocolError` and `ioError`).
    package var connectFailures = 0
    /// Connect attempts that failed and open connections that ended on a protocol or I/O
    /// error, by cause.
    package var connectionFailuresByCause: [ConnectionFailure.Cause: Int] = [:]
    /// Connections currently taking requests.
    package var liveConnections = 0
    /// Connections whose rate is currently lowered because 429s spread.
    package var throttledConnections = 0

    package init() {}

    package var answers: Int { answersByStatus.values.reduce(0, +) }
}
