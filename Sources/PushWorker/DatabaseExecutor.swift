import Dispatch
import Postgres
import PushQueue

/// Runs queue operations on one PostgreSQL connection, one at a time, on a
/// serial queue of its own: libpq blocks, and blocking must stay off the
/// cooperative thread pool (two threads on this machine).
///
/// The connection is made lazily and dropped after a connection failure, so
/// the next operation reconnects; callers decide how long to wait in between.
final class DatabaseExecutor: @unchecked Sendable {
    // @unchecked: `queue` (the NotificationQueue) is touched only on `serial`.
    private let serial: DispatchQueue
    private let conninfo: String
    private let workerID: String
    private var queue: NotificationQueue?

    init(name: String, conninfo: String, workerID: String) {
        serial = DispatchQueue(label: "pgpush.db.\(name)")
        self.conninfo = conninfo
        self.workerID = workerID
    }

    func run<T: Sendable>(_ body: @escaping @Sendable (NotificationQueue) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            serial.async {
                do {
                    let queue = try self.connectedQueue()
                    continuation.resume(returning: try body(queue))
                } catch {
                    if let error = error as? PostgresError, error.isConnectionProblem {
                        self.queue = nil
                    }
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    private func connectedQueue() throws -> NotificationQueue {
        if let queue, queue.connection.isConnected { return queue }
        let connection = try PostgresConnection(conninfo: conninfo)
        try connection.execute(script: "SET application_name = 'pgpush worker'")
        // The claim and outcome statements, thousands a minute, parsed and planned once per
        // session (through a transaction pooler the connection finds out and stops).
        connection.preparesStatements = true
        let fresh = NotificationQueue(connection: connection, workerID: workerID)
        queue = fresh
        return fresh
    }
}
