import Foundation

/// Where a service's connections go: a host and a port.
package struct ServiceAddress: Equatable, Sendable, CustomStringConvertible {
    package let host: String
    package let port: Int

    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `host:port`, with an IPv6 literal in brackets: for logs and metrics.
    package var hostAndPort: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    package var description: String { hostAndPort }
}

/// A credential a connection carries for its whole life (APNs's provider token: APNs takes
/// one per connection and refuses another within 20 minutes). The pool gives a request
/// only a connection that carries none yet or this one, and retires connections that carry
/// an older one.
package struct ConnectionCredential: Equatable, Sendable {
    package let text: String
    package let issuedAt: Date

    package init(text: String, issuedAt: Date) {
        self.text = text
        self.issuedAt = issuedAt
    }
}
