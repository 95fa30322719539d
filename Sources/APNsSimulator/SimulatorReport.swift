import Foundation

/// What the simulator received and answered, for tests and benchmarks. Encodes to
/// the JSON that `pgpush mock-apns --report` writes.
package struct SimulatorReport: Sendable, Equatable, Codable {
    /// Every request stream that reached the simulator, including refused and dropped ones.
    package var totalRequests = 0
    /// Answered requests by status, e.g. `"200": 98`.
    package var statusCounts: [String: Int] = [:]
    /// Answered errors by reason, e.g. `"ServiceUnavailable": 2`.
    package var reasonCounts: [String: Int] = [:]
    /// Streams certainly not processed: reset with REFUSED_STREAM, or left out by a GOAWAY
    /// whose last_stream_id is below them.
    package var refusedStreams = 0
    /// Requests lost with their connection (dropped on purpose: outcome unknown to the client).
    package var unansweredRequests = 0
    package var goAwaysSent = 0
    /// GOAWAYs sent by their debug-data reason, e.g. `"Shutdown": 3`. Kept apart from
    /// `reasonCounts`, which counts answers: a GOAWAY answers no request.
    package var goAwayReasons: [String: Int] = [:]
    /// Connections that finished their TLS handshake, in total (open or not).
    package var connectionsOpened = 0
    package var connectionsDropped = 0
    /// `apns-id`s that arrived on more than one processed request (refused streams do
    /// not count: they were certainly not processed).
    package var duplicateAPNsIDs = 0
    /// `apns-id`s answered 200 more than once: a notification delivered twice.
    package var duplicateAcceptedAPNsIDs = 0
    /// The most requests any one connection received within any one second.
    package var maxRequestsPerConnectionPerSecond = 0
    package var connections: [ConnectionReport] = []
    /// Broadcast requests received per channel id (whatever their answer).
    package var broadcastsByChannel: [String: Int] = [:]
    /// Channel management requests received (create, read, delete, list).
    package var managementRequests = 0

    package init() {}

    package func count(status: Int) -> Int { statusCounts[String(status)] ?? 0 }
    package func count(reason: String) -> Int { reasonCounts[reason] ?? 0 }
    package func count(goAwayReason reason: String) -> Int { goAwayReasons[reason] ?? 0 }
    package func broadcasts(toChannel channelID: String) -> Int { broadcastsByChannel[channelID] ?? 0 }

    package func jsonData() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }
}

/// One connection in a `SimulatorReport`.
package struct ConnectionReport: Sendable, Equatable, Codable {
    package var id: Int
    package var requests: Int
    /// The most requests this connection received within any one second.
    package var maxRequestsInOneSecond: Int
    /// Whether a valid JWT (or client certificate) was accepted on it.
    package var authenticated: Bool
    package var open: Bool

    package init(id: Int, requests: Int, maxRequestsInOneSecond: Int, authenticated: Bool, open: Bool) {
        self.id = id
        self.requests = requests
        self.maxRequestsInOneSecond = maxRequestsInOneSecond
        self.authenticated = authenticated
        self.open = open
    }
}
