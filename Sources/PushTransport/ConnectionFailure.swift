import Foundation
import HTTP2TLS
import PGPushCore

/// Why a connection to a push service could not be opened, or why an open one ended on an error:
/// the endpoint, a cause from a small fixed set (a metric label), and the particulars an
/// operator needs to fix it: OpenSSL's verify result and the server certificate's subject
/// and validity, the ALPN protocol the server picked, the resolver's or kernel's message.
package struct ConnectionFailure: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Cause: String, Sendable, CaseIterable, Comparable {
        /// The host name did not resolve.
        case dns
        /// The host resolved only to addresses the sender may not connect to (a Web Push
        /// endpoint's host inside a private range): nothing was connected to.
        case addressNotPermitted = "address_not_permitted"
        /// No TCP connection (refused, unreachable).
        case tcpConnect = "tcp_connect"
        /// The connect timeout passed before the handshake and the first SETTINGS.
        case timeout
        /// The server's certificate did not verify (expired, another host name, unknown CA, …).
        case tlsCertificate = "tls_certificate"
        /// Any other TLS handshake failure (protocol version, cipher, alert from the server, …).
        case tlsHandshake = "tls_handshake"
        /// The server did not agree to HTTP/2 (ALPN h2).
        case alpn
        /// The HTTP proxy refused the tunnel (403, 407, …) or could not be reached.
        case proxy
        /// An open connection ended on an HTTP/2 framing error.
        case protocolError = "protocol_error"
        /// An open connection ended on a socket or TLS error.
        case ioError = "io_error"
        /// An open connection stopped answering: no PING answer in time, or request deadlines
        /// in a row with no answer between (it was replaced).
        case unresponsive
        /// An open connection ended because an answer went past the header-list bound.
        case responseTooLarge = "response_too_large"

        package static func < (lhs: Cause, rhs: Cause) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// host:port
    package var endpoint: String
    package var cause: Cause
    /// The most specific reason there is: "certificate has expired", "hostname mismatch",
    /// the resolver's message, OpenSSL's error, …
    package var reason: String
    /// For `tlsCertificate`: OpenSSL's verify result (`X509_V_ERR_*`).
    package var verifyResult: Int?
    /// For `tlsCertificate`: the server's certificate, when it sent one.
    package var certificate: CertificateRejection.Certificate?
    /// For `alpn`: the protocol the server picked instead of h2; nil when it picked none.
    package var alpnSelected: String?
    /// For `proxy`: the status the proxy answered CONNECT with, nil when none came.
    package var proxyStatus: Int?
    /// The transport's whole description of the failure.
    package var detail: String

    package init(endpoint: String, cause: Cause, reason: String, detail: String? = nil) {
        self.endpoint = endpoint
        self.cause = cause
        self.reason = reason
        self.detail = detail ?? reason
    }

    /// Nil for `clientShutDown`: the client stopped, nothing failed.
    package init?(endpoint: String, error: ConnectError) {
        switch error {
        case .clientShutDown: return nil
        case .resolutionFailed(_, let detail): self.init(endpoint: endpoint, cause: .dns, reason: detail)
        case .addressNotPermitted(_, let addresses):
            self.init(endpoint: endpoint, cause: .addressNotPermitted, reason: "resolves only to addresses not permitted: \(addresses)")
        case .connectFailed(let text): self.init(endpoint: endpoint, cause: .tcpConnect, reason: text)
        case .timedOut: self.init(endpoint: endpoint, cause: .timeout, reason: "connect timed out")
        case .tlsHandshakeFailed(let text): self.init(endpoint: endpoint, cause: .tlsHandshake, reason: text)
        case .certificateRejected(let rejection):
            self.init(endpoint: endpoint, cause: .tlsCertificate, reason: rejection.reason)
            verifyResult = rejection.verifyResult
            certificate = rejection.certificate
        case .alpnNotNegotiated(let selected):
            self.init(endpoint: endpoint, cause: .alpn,
                      reason: "the server did not agree to HTTP/2 (ALPN h2); it selected \(selected ?? "no protocol")")
            alpnSelected = selected
        case .proxyRefused(_, let status, _):
            // The transport's sentence: which proxy (its password hidden), what it said, what to check.
            self.init(endpoint: endpoint, cause: .proxy, reason: error.description)
            proxyStatus = status
        case .proxyFailed(_, let detail):
            self.init(endpoint: endpoint, cause: .proxy, reason: detail)
        }
        detail = error.description
    }

    /// Nil unless the connection ended on a fault of its own (protocol, I/O, an unanswering
    /// or oversized peer): a GOAWAY, a local close or the peer's orderly close is not a
    /// failure of the connection.
    package init?(endpoint: String, closeReason: CloseReason) {
        switch closeReason {
        case .protocolError(let text): self.init(endpoint: endpoint, cause: .protocolError, reason: text)
        case .ioError(let text): self.init(endpoint: endpoint, cause: .ioError, reason: text)
        case .pingTimeout, .unresponsive: self.init(endpoint: endpoint, cause: .unresponsive, reason: closeReason.description)
        case .responseTooLarge: self.init(endpoint: endpoint, cause: .responseTooLarge, reason: closeReason.description)
        case .closedLocally, .goAway, .peerClosed: return nil
        }
        detail = closeReason.description
    }

    /// What a send that finds no connection fails as at once, when this failure is one that
    /// waiting out the request timeout will not change; nil for the others.
    package var lastingCause: DeliveryFailure.Cause? {
        switch cause {
        case .addressNotPermitted: .addressNotPermitted
        case .proxy where proxyStatus != nil: .proxyRefused
        default: nil
        }
    }

    /// Whether the connection never opened (as against opened, then ended on an error).
    package var duringConnect: Bool {
        switch cause {
        case .dns, .addressNotPermitted, .tcpConnect, .timeout, .tlsCertificate, .tlsHandshake, .alpn, .proxy: true
        case .protocolError, .ioError, .unresponsive, .responseTooLarge: false
        }
    }

    package var description: String { "\(endpoint): \(detail)" }
}
