import HTTP2TLS

/// One request's claim on a pooled connection: the connection, its slot, and the instant
/// the rate limiter reserved for the request's start.
struct ConnectionLease: Sendable {
    let slot: Int
    let connection: HTTP2ClientConnection
    let start: ContinuousClock.Instant
    let limiter: RateLimiter<ContinuousClock>
}

/// What asking the pool for a connection gave.
enum LeaseAttempt: Sendable {
    case leased(ConnectionLease)
    /// Nothing usable now; wait for the pool to change after this generation.
    case unavailable(generation: Int)
    case shutDown
}
