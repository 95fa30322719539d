import HTTP2TLS
import PGPushCore

/// How one app's sending to one service uses its connections: the same settings for every
/// service, their defaults written here once and checked here once (`problem()`).
package struct ConnectionSettings: Sendable, Equatable {
    package static let maximumConnections = 64
    package static let maximumRatePerConnection = 1_000_000
    package static let longestTimeout: Duration = .seconds(600)

    /// HTTP/2 connections kept open (`PGPUSH_CONNECTIONS`, `connections`).
    package var connections = 4
    /// Requests per second per connection, over any one-second window (`RateCap`); nil or 0:
    /// no cap (benchmarks). A connection whose answers are more than 10 % 429 runs at half
    /// this rate for a while (`TooManyRequestsThrottle`); an uncapped one does not.
    package var ratePerConnection: Int? = RateCap.standardPerConnection
    /// From writing a request to its answer; also how long a send waits for a connection.
    package var requestTimeout: Duration = .seconds(10)
    /// TCP connect plus TLS handshake.
    package var connectTimeout: Duration = .seconds(10)
    package var reconnectBackoff: ReconnectBackoff = .standard
    /// Every connection through this proxy's CONNECT tunnel (`HTTPS_PROXY`, `--proxy`), except
    /// to hosts its `NO_PROXY` names; nil: straight to the service.
    package var proxy: HTTPProxy?
    /// A cap over all the connections together (`rate_per_app`: this worker's share of it,
    /// granted as the database leases it); nil: none.
    package var sharedWindow: SharedSubmitWindow?

    package init() {}

    /// A connection's transport settings from these: the deadlines, the cap held again at the
    /// instant of writing (the pool spaces requests; a stalled I/O loop can then delay
    /// requests but never bunch them, so the cap holds over any one-second window), the proxy.
    package func clientConfiguration(tls: ClientTLSContext) -> HTTP2ClientConfiguration {
        var connection = HTTP2ClientConfiguration(tls: tls)
        connection.requestTimeout = requestTimeout
        connection.connectTimeout = connectTimeout
        connection.maxRequestsPerSecond = effectiveRatePerConnection
        connection.proxy = proxy
        connection.sharedWindow = sharedWindow
        return connection
    }

    /// The cap as the rate limiter takes it: nil when unlimited.
    package var effectiveRatePerConnection: Int? { RateCap.perConnection(ratePerConnection) }

    /// The first setting that cannot work, named as an operator sets it, with what is wrong.
    package func problem() -> (setting: String, problem: String)? {
        guard (1...Self.maximumConnections).contains(connections) else {
            return ("connections (PGPUSH_CONNECTIONS)", "must be from 1 to \(Self.maximumConnections), got \(connections)")
        }
        if let ratePerConnection, !(0...Self.maximumRatePerConnection).contains(ratePerConnection) {
            return ("rate per connection (PGPUSH_RATE_PER_CONNECTION)",
                    "must be from 0 (no cap) to \(Self.maximumRatePerConnection) requests/s, got \(ratePerConnection)")
        }
        guard requestTimeout > .zero, requestTimeout <= Self.longestTimeout else {
            return ("request timeout", "must be more than 0 and at most 600 s, got \(requestTimeout)")
        }
        guard connectTimeout > .zero, connectTimeout <= Self.longestTimeout else {
            return ("connect timeout", "must be more than 0 and at most 600 s, got \(connectTimeout)")
        }
        guard reconnectBackoff.initial > .zero, reconnectBackoff.maximum >= reconnectBackoff.initial else {
            return ("reconnect backoff", "initial delay must be more than 0 and at most the maximum")
        }
        return nil
    }
}
