import Foundation
import Postgres
import PGPushCore
import PGPushTestSupport
import PushTransport
import PushWorker

/// Rows for a scenario and the polling that tells when they have settled.
enum Backlog {
    static let payload = #"{"aps":{"alert":"reliability"}}"#

    static func token(_ number: Int) -> String { String(format: "%064x", number) }

    /// `count` rows with distinct device tokens `first ..< first + count`.
    static func enqueue(_ database: PostgresConnection, count: Int, first: Int = 1) throws {
        let tokens = (first..<(first + count)).map(token)
        for chunk in stride(from: 0, to: tokens.count, by: 5000) {
            let slice = Array(tokens[chunk..<min(chunk + 5000, tokens.count)])
            try database.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => $2::jsonb)", [slice, payload])
        }
    }

    static func count(_ database: PostgresConnection, _ condition: String) throws -> Int {
        try database.query("SELECT count(*) FROM pgpush.notifications WHERE \(condition)").int(0, 0) ?? 0
    }

    /// Polls until no row is `sending` or due in `queued` (the worker has no "done"
    /// event; rows parked for a later retry count as settled only once due and sent).
    /// Reconnects between polls, so it survives a database outage. Returns false on timeout.
    static func waitUntilSettled(conninfo: String, timeout: Duration) async -> Bool {
        (try? await eventually(reconnectingTo: conninfo, timeout: timeout, every: .milliseconds(100)) { database in
            try count(database, "status IN ('queued', 'sending')") == 0
        }) ?? false
    }

    /// Polls until at least `rows` rows are delivered; false on timeout.
    static func waitUntilDelivered(conninfo: String, atLeast rows: Int, timeout: Duration) async -> Bool {
        (try? await eventually(reconnectingTo: conninfo, timeout: timeout) { database in
            try count(database, "status = 'delivered'") >= rows
        }) ?? false
    }
}

/// A `Worker` running in this process, as the end-to-end tests run it.
struct InProcessWorker {
    let worker: Worker
    let running: Task<Void, any Error>

    static func start(conninfo: String, app: AppConfiguration, id: String, lease: Duration = .seconds(60),
                      sender: (any NotificationSender)? = nil,
                      adjust: (inout WorkerConfiguration) -> Void = { _ in }) throws -> InProcessWorker {
        var configuration = WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: id)
        configuration.apps[0].retry = fastRetries
        configuration.pollInterval = .milliseconds(100)
        configuration.lease = lease
        adjust(&configuration)
        let senders = try sender.map { [$0] } ?? SenderFactory.makeSenders(for: [app])
        let worker = try Worker(configuration: configuration, senders: senders, log: Log(minimum: .error))
        return InProcessWorker(worker: worker, running: Task { try await worker.run() })
    }

    func stop() async throws {
        worker.stop()
        try await running.value
    }

    /// Retries after tens of milliseconds, so a storm settles within the test.
    static var fastRetries: RetryConfiguration {
        var retry = RetryConfiguration.default
        retry.serverErrorDelay = .milliseconds(10) ... .milliseconds(100)
        retry.tooManyRequestsBaseDelay = .milliseconds(20)
        retry.tooManyRequestsMaximumDelay = .milliseconds(200)
        return retry
    }
}
