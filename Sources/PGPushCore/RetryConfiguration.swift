/// The numbers behind `RetryRules`, one set per app and used for every service (`AppConfiguration.retry`).
/// The defaults are below; the first five properties are settings of each app: flags,
/// environment variables or keys under `"retry"` in the app's entry of the
/// configuration file (`pgpush run --help` lists them).
///
/// - 5xx / no response: 3 retries (`PGPUSH_RETRY_SERVER_ERRORS`), each after a
///   delay drawn uniformly from 1–5 s (`PGPUSH_RETRY_DELAY_MIN_SECONDS`,
///   `PGPUSH_RETRY_DELAY_MAX_SECONDS`). Apple suggests waiting much longer (about
///   15 minutes) after a 5xx; pgpush retries sooner because most 5xx seen in
///   practice come from one overloaded or restarting front end, and another
///   connection answers at once. Operators who prefer Apple's advice raise the range.
/// - 429 TooManyRequests: the device token is pushed to too often, so the wait
///   grows: 1 s, 2 s, 4 s … (`PGPUSH_RETRY_429_BASE_SECONDS`) capped at 60 s
///   (`PGPUSH_RETRY_429_MAX_DELAY_SECONDS`), with equal jitter (half the step fixed,
///   half random) so a retry never comes immediately yet spreads out; at most 8
///   attempts in total (`PGPUSH_RETRY_429_MAX_ATTEMPTS`).
/// - Requests a service certainly did not process (refused streams, GOAWAY) go back to
///   the queue uncounted, at most `notProcessedRequeues` times: a server refusing
///   stream after stream is then treated like one that does not answer. This cap is
///   fixed, not a setting.
package struct RetryConfiguration: Equatable, Sendable {
    /// Retries after 5xx or no response; total attempts are one more.
    package var serverErrorRetries: Int
    package var serverErrorDelay: ClosedRange<Duration>
    package var tooManyRequestsBaseDelay: Duration
    package var tooManyRequestsMaximumDelay: Duration
    /// Total attempts (including the first) before a 429 fails the notification.
    package var tooManyRequestsMaximumAttempts: Int
    /// Uncounted returns to the queue for requests the service certainly did not process
    /// (refused streams, GOAWAY), after the client's own resends; past it the next
    /// one counts like a lost answer, so a server refusing everything cannot keep a
    /// row circling forever.
    package var notProcessedRequeues: Int

    package init(
        serverErrorRetries: Int = 3,
        serverErrorDelay: ClosedRange<Duration> = .seconds(1) ... .seconds(5),
        tooManyRequestsBaseDelay: Duration = .seconds(1),
        tooManyRequestsMaximumDelay: Duration = .seconds(60),
        tooManyRequestsMaximumAttempts: Int = 8,
        notProcessedRequeues: Int = 5
    ) {
        self.serverErrorRetries = serverErrorRetries
        self.serverErrorDelay = serverErrorDelay
        self.tooManyRequestsBaseDelay = tooManyRequestsBaseDelay
        self.tooManyRequestsMaximumDelay = tooManyRequestsMaximumDelay
        self.tooManyRequestsMaximumAttempts = tooManyRequestsMaximumAttempts
        self.notProcessedRequeues = notProcessedRequeues
    }

    package static let `default` = RetryConfiguration()
}
