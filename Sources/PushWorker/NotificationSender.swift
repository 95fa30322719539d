import Foundation
import PGPushCore

/// What the worker needs from an APNs client: send one request, learn what happened.
public protocol NotificationSender: Sendable {
    func send(_ request: APNsRequest) async -> SendResult
    /// Requests per second all connections together may send (claim sizing); nil when uncapped.
    var requestsPerSecond: Int? { get }
    /// How the app authenticates (which headers the core builds).
    var authentication: AuthenticationMethod { get }
    func shutdown() async
}

/// The end of one send, after any resends the client made on its own.
public struct SendResult: Sendable, Equatable {
    public enum Answer: Sendable, Equatable {
        /// APNs answered. `reason` and `timestamp` come from the error body.
        case response(status: Int, reason: String?, timestamp: Date?)
        /// Certainly never processed by APNs (refused stream, above GOAWAY's last stream, never written).
        case notProcessed(String)
        /// No answer, and APNs may have processed it (deadline passed, connection lost after writing).
        case noResponse(String)
    }

    public var answer: Answer
    /// Uncounted resends on a fresh connection the client already made for this request.
    public var freshConnectionResends: Int

    public init(_ answer: Answer, freshConnectionResends: Int = 0) {
        self.answer = answer
        self.freshConnectionResends = freshConnectionResends
    }
}
