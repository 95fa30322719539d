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

    /// The result in `DeliveryPolicy`'s words.
    public var answer: APNsAnswer {
        if let failure {
            switch failure.cause {
            case .invalidRequest: return .unsendable
            case .credentials: return .unsignable
            default: return .unanswered(failure.processing, goAwayReason: failure.apnsReason)
            }
        }
        return .answered(status: status ?? 0, reason: reason)
    }

    /// What the answer means for the row; `topicWasExplicit`: the row named its own topic.
    public func meaning(topicWasExplicit: Bool = false) -> AnswerMeaning {
        DeliveryPolicy.meaning(of: answer, topicWasExplicit: topicWasExplicit)
    }
}

/// Why a request got no answer, and whether APNs may have acted on it.
public struct DeliveryFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Cause: String, CaseIterable, Sendable, Equatable {
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
        /// The answer went past the HTTP/2 client's bound on a response's body or header
        /// list; the request may have been processed.
        case responseTooLarge
        /// The HTTP/2 layer refused to encode the request; sending it again will not help.
        case invalidRequest
        /// The client was shut down, or the sending task cancelled, before an answer.
        case clientShutDown
        /// No provider token could be signed: the app's key is unusable.
        case credentials
    }

    public var processing: Processing
    public var cause: Cause
    /// The APNs reason behind the failure, when there is one: the `reason` of the GOAWAY
    /// that ended the connection, or ExpiredProviderToken while signing waits after APNs
    /// refused freshly signed tokens.
    public var apnsReason: String?
    /// For logs; never contains a JWT or key material.
    public var detail: String

    public init(processing: Processing, cause: Cause, apnsReason: String? = nil, detail: String) {
        self.processing = processing
        self.cause = cause
        self.apnsReason = apnsReason
        self.detail = detail
    }

    public var description: String {
        "\(cause.rawValue) (\(processing == .notProcessed ? "not processed" : "may have been processed")): \(detail)"
    }
}

extension DeliveryFailure.Cause {
    /// Whether sending the request again on another connection could get it an answer:
    /// the stream was refused or the connection went away. A deadline already passed, a
    /// reset stream, a shutdown or an unencodable request would fail alike.
    public var anotherConnectionMayHelp: Bool {
        switch self {
        case .refusedStream, .goAway, .connectionLost: true
        case .couldNotConnect, .deadlineExceeded, .streamReset, .responseTooLarge, .invalidRequest, .clientShutDown, .credentials:
            false
        }
    }
}
