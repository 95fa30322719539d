/// Whether a service may have acted on a request that got no answer. The one vocabulary
/// for it from the transport up: a request that was `notProcessed` can be sent again
/// without any risk of a duplicate; one that `mayHaveBeenProcessed` cannot.
package enum Processing: String, Sendable, Equatable {
    /// Never written, refused (REFUSED_STREAM), above a GOAWAY's last stream id, or no connection.
    case notProcessed
    /// Written but not answered (deadline, connection lost): it may have been delivered.
    case mayHaveBeenProcessed
}

/// Why a request got no answer, and whether the service may have acted on it.
package struct DeliveryFailure: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Cause: String, CaseIterable, Sendable, Equatable {
        /// No connection could be opened within the request timeout.
        case couldNotConnect
        /// The host resolved only to addresses the sender may not connect to (a Web Push
        /// endpoint's name pointing into a private network): nothing was connected to, and
        /// waiting will not change it.
        case addressNotPermitted
        /// The HTTP proxy refused the tunnel (403 not allowed, 407 credentials): a setting to
        /// fix, which waiting will not change.
        case proxyRefused
        /// RST_STREAM REFUSED_STREAM, also after the sender's own resends.
        case refusedStream
        /// The connection was going away (GOAWAY) and resends were used up.
        case goAway
        /// No answer within the request timeout.
        case deadlineExceeded
        /// The connection ended before the answer.
        case connectionLost
        /// The service reset the stream with an error code.
        case streamReset
        /// The answer went past the HTTP/2 client's bound on a response's body or header
        /// list; the request may have been processed.
        case responseTooLarge
        /// The HTTP/2 layer refused to encode the request; sending it again will not help.
        case invalidRequest
        /// The sender was shut down, or the sending task cancelled, before an answer.
        case clientShutDown
        /// No credential could be had for the request (an APNs provider token that cannot be
        /// signed, an FCM access token refused): the app's credentials are unusable.
        case credentials
    }

    package var processing: Processing
    package var cause: Cause
    /// The service's reason behind the failure, when there is one: the `reason` of the
    /// GOAWAY that ended the connection, or why credentials are refused.
    package var serviceReason: String?
    /// For logs; never contains a token or key material.
    package var detail: String

    package init(processing: Processing, cause: Cause, serviceReason: String? = nil, detail: String) {
        self.processing = processing
        self.cause = cause
        self.serviceReason = serviceReason
        self.detail = detail
    }

    package var description: String {
        "\(cause.rawValue) (\(processing == .notProcessed ? "not processed" : "may have been processed")): \(detail)"
    }

    /// What `last_reason` shows for it: the service's reason, else the cause
    /// ("DeadlineExceeded", "ConnectionLost", …).
    package var reasonText: String {
        serviceReason ?? cause.rawValue.prefix(1).uppercased() + cause.rawValue.dropFirst()
    }
}

extension DeliveryFailure.Cause {
    /// Whether sending the request again on another connection could get it an answer:
    /// the stream was refused or the connection went away. A deadline already passed, a
    /// reset stream, a shutdown or an unencodable request would fail alike.
    package var anotherConnectionMayHelp: Bool {
        switch self {
        case .refusedStream, .goAway, .connectionLost: true
        case .couldNotConnect, .addressNotPermitted, .proxyRefused, .deadlineExceeded, .streamReset, .responseTooLarge,
             .invalidRequest, .clientShutDown, .credentials:
            false
        }
    }
}
