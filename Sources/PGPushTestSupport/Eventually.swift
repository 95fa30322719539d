import Postgres

/// How long a test waits for a state that is sure to come (rows drained, a row's end): with a
/// core kept busy, each test of the suite runs 100–200 s beside the others, and a drain that
/// takes seconds alone can take a minute or two. The waits end on the state, so a passing
/// test waits no longer for the room.
package let stateWaitLimit: Duration = .seconds(300)

/// Polls `condition` until it holds or `timeout` passes; returns whether it held.
/// For state that lives in another process or in the database, where no event
/// reaches the test; the poll interval is short, so it adds no fixed delay.
package func eventually(timeout: Duration = .seconds(180), every interval: Duration = .milliseconds(20),
                       _ condition: () throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try await Task.sleep(for: interval)
    }
}

/// `eventually` for state read from PostgreSQL: the condition runs on a connection that is
/// opened again after any error, so the wait survives a server restart, an outage or a
/// failover; an error counts as "not yet".
package func eventually(reconnectingTo conninfo: String, timeout: Duration, every interval: Duration = .milliseconds(20),
                       _ condition: (PostgresConnection) throws -> Bool) async throws -> Bool {
    var connection: PostgresConnection?
    return try await eventually(timeout: timeout, every: interval) {
        do {
            let database = try connection ?? PostgresConnection(conninfo: conninfo)
            connection = database
            return try condition(database)
        } catch {
            connection = nil
            return false
        }
    }
}
