import HTTP2TLS

/// One request's claim on a stream of a pooled connection, granted at the instant the
/// connection's rate recorded: the request is to be written now.
package struct PoolLease<Connection: AnyObject & Sendable>: Sendable {
    package let slot: Int
    package let connection: Connection
}

/// What asking the pool for a connection gave.
package enum PoolLeaseAttempt<Connection: AnyObject & Sendable>: Sendable {
    case leased(PoolLease<Connection>)
    /// Nothing to write on now; wait for the pool to change after this generation.
    /// `rateLimited`: a stream is free, but the rate is used up and another request
    /// already sleeps until it frees.
    case unavailable(generation: Int, rateLimited: Bool)
    /// A stream is free but every such connection sent its full rate in the last window;
    /// the caller is the one request that sleeps until `until`, when the first frees.
    case rateLimited(until: PoolInstant, generation: Int)
    /// APNs refused the provider token the request was to carry: read the token again.
    case tokenRefused
    case shutDown
}

package typealias ConnectionLease = PoolLease<HTTP2ClientConnection>
package typealias LeaseAttempt = PoolLeaseAttempt<HTTP2ClientConnection>
