import Foundation
import PGPushCore

/// What became of one `APNsClient.send`: APNs's answer, or why there is none. Every
/// outcome is a value; `send` never throws.
public struct DeliveryResult: Sendable, Equatable {
    /// The HTTP status; nil when no answer arrived (see `failure`).
    public var status: Int?
    /// `reason` from the error body (nil on 200 or when the body had none).
    public var reason: String?
    /// Apple's `timestamp` from the error body: when the token was last seen invalid (410).
    public var timestamp: Date?
    /// `apns-id` as APNs echoed it.
    public var apnsID: String?
    /// `apns-unique-id` (sandbox only), for Apple's delivery log.
    public var apnsUniqueID: String?
    /// Why no answer arrived; nil when `status` is set.
    public var failure: DeliveryFailure?
    /// Resends done inside the client that the caller does not count as attempts:
    /// refused / GOAWAY'd streams, ExpiredProviderToken, TooManyProviderTokenUpdates.
    public var resends: Int
    /// From `send` being called to this result, including waits for a connection and the rate limit.
    public var latency: Duration

    public init(status: Int?, reason: String? = nil, timestamp: Date? = nil, apnsID: String? = nil,
                apnsUniqueID: String? = nil, failure: DeliveryFailure? = nil, resends: Int = 0, latency: Duration = .zero) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.apnsID = apnsID
        self.apnsUniqueID = apnsUniqueID
        self.failure = failure
        self.resends = resends
        self.latency = latency
    }

    public var isDelivered: Bool { status.map { (200..<300).contains($0) } ?? false }

    /// The next step for the notification and the app (SPEC §4). `topicWasExplicit`: the
    /// row named its own topic, so topic errors are that row's fault (see `ReasonCatalogue`).
    public func outcomeClass(topicWasExplicit: Bool) -> OutcomeClass {
        if let failure { return failure.outcomeClass }
        return ReasonCatalogue.classify(status: status, reason: reason, topicWasExplicit: topicWasExplicit)
    }

    /// `outcomeClass(topicWasExplicit: false)`.
    public var outcomeClass: OutcomeClass { outcomeClass(topicWasExplicit: false) }
}

/// Why a request got no answer, and whether APNs may have acted on it.
public struct DeliveryFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Processing: String, Sendable, Equatable {
        /// Certainly never processed by APNs (never written, refused, above GOAWAY's
        /// last_stream_id, or no connection): sending it again cannot duplicate it.
        case notProcessed
        /// Written but not answered (deadline, connection lost): it may have been delivered.
        case mayHaveBeenProcessed
    }

    public enum Cause: String, Sendable, Equatable {
        /// No connection could be opened within the request timeout.
        case couldNotConnect
        /// RST_STREAM REFUSED_STREAM, also after the client's own resends.
        case refusedStream
        /// The connection was going away (GOAWAY) and resends were used up.
        case goAway
        /// No answer within the request timeout.
        case deadlineExceeded
        /// The connection ended before the answer.
        case connectionLost
        /// APNs reset the stream with an error code.
        case streamReset
        /// The HTTP/2 layer refused to encode the request; sending it again will not help.
        case invalidRequest
        /// The client was shut down, or the sending task cancelled, before an answer.
        case clientShutDown
        /// No provider token could be signed: the app's key is unusable.
        case credentials
    }

    public var processing: Processing
    public var cause: Cause
    /// For logs; never contains a JWT or key material.
    public var detail: String

    public init(processing: Processing, cause: Cause, detail: String) {
        self.processing = processing
        self.cause = cause
        self.detail = detail
    }

    /// Not-processed failures are `.notProcessed` (resend, not an attempt); may-have-been-
    /// processed ones are "no response" (`.retryServerError`); a request the HTTP/2 layer
    /// cannot encode fails for good; unusable credentials mark the app misconfigured.
    public var outcomeClass: OutcomeClass {
        switch cause {
        case .invalidRequest: return .permanentFailure
        case .credentials: return .appMisconfigured
        default: return processing == .notProcessed ? .notProcessed : ReasonCatalogue.classify(status: nil, reason: nil)
        }
    }

    public var description: String {
        "\(cause.rawValue) (\(processing == .notProcessed ? "not processed" : "may have been processed")): \(detail)"
    }
}
