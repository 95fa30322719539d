/// The numbers behind `RetryPolicy` (SPEC §4 defaults; all configurable).
///
/// - 5xx / no response: 3 retries, each after a delay drawn uniformly from
///   1–5 s. This is faster than Apple's "retry 5xx after 15 minutes"
///   (apns-reference §4, §7): most 5xx seen in practice are one overloaded or
///   restarting front end, and another connection answers at once. Operators who
///   prefer Apple's advice raise the range.
/// - 429 TooManyRequests: the device token is pushed to too often, so the wait
///   grows: 1 s, 2 s, 4 s … capped at 60 s, with equal jitter (half the step fixed,
///   half random) so a retry never comes immediately yet spreads out; at most 8
///   attempts in total.
/// - Fresh-connection resends (ExpiredProviderToken, TooManyProviderTokenUpdates,
///   unprocessed streams) are not counted as attempts, so they get their own small
///   cap: a second ExpiredProviderToken right after a fresh JWT points at the key
///   or the clock, which is an app problem; a server refusing stream after stream
///   is treated like one that does not answer.
public struct RetryConfiguration: Equatable, Sendable {
    /// Retries after 5xx or no response; total attempts are one more.
    public var serverErrorRetries: Int
    public var serverErrorDelay: ClosedRange<Duration>
    public var tooManyRequestsBaseDelay: Duration
    public var tooManyRequestsMaximumDelay: Duration
    /// Total attempts (including the first) before a 429 fails the notification.
    public var tooManyRequestsMaximumAttempts: Int
    /// Uncounted resends on a fresh connection allowed per notification.
    public var freshConnectionResends: Int
    /// Uncounted returns to the queue for requests APNs certainly did not process
    /// (refused streams, GOAWAY), after the client's own resends; past it the next
    /// one counts like a lost answer, so a server refusing everything cannot keep a
    /// row circling forever.
    public var notProcessedRequeues: Int

    public init(
        serverErrorRetries: Int = 3,
        serverErrorDelay: ClosedRange<Duration> = .seconds(1) ... .seconds(5),
        tooManyRequestsBaseDelay: Duration = .seconds(1),
        tooManyRequestsMaximumDelay: Duration = .seconds(60),
        tooManyRequestsMaximumAttempts: Int = 8,
        freshConnectionResends: Int = 2,
        notProcessedRequeues: Int = 5
    ) {
        self.serverErrorRetries = serverErrorRetries
        self.serverErrorDelay = serverErrorDelay
        self.tooManyRequestsBaseDelay = tooManyRequestsBaseDelay
        self.tooManyRequestsMaximumDelay = tooManyRequestsMaximumDelay
        self.tooManyRequestsMaximumAttempts = tooManyRequestsMaximumAttempts
        self.freshConnectionResends = freshConnectionResends
        self.notProcessedRequeues = notProcessedRequeues
    }

    public static let `default` = RetryConfiguration()
}
