import Foundation
import Postgres

/// What a connection string leads to when a pooler may stand between pgpush and
/// PostgreSQL: whether NOTIFY reaches a LISTEN made through it, and whether sessions
/// share server backends (a transaction pooler such as PgBouncer with
/// `pool_mode = transaction`).
///
/// pgpush keeps no session state across transactions (its advisory locks are
/// transaction-level), so claims, outcomes, `migrate` and `prune` work through a
/// transaction pooler. LISTEN does not: the pooler hands the server connection that
/// ran it to other clients, and the notifications go wherever that connection goes.
package enum ConnectionPooling {
    /// Whether a notification sent through `notifyConninfo` reaches `listening` within
    /// `timeout`. The channel is this call's own and is left again before returning, so a
    /// session that does receive notifications keeps no trace of the check. `wakeDescriptor`
    /// (an eventfd) ends the wait early; the answer is then false.
    package static func deliversNotifications(to listening: PostgresConnection, from notifyConninfo: String,
                                             timeout: Duration, wakeDescriptor: Int32? = nil) throws -> Bool {
        let channel = "pgpush_probe_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try listening.execute(script: "LISTEN \(channel)")
        try PostgresConnection(conninfo: notifyConninfo).query("SELECT pg_notify($1, '')", [channel])
        let deadline = ContinuousClock.now + timeout
        var received = false
        while !received, ContinuousClock.now < deadline {
            let notifications = try listening.waitForNotifications(timeout: deadline - ContinuousClock.now,
                                                                   wakeDescriptor: wakeDescriptor)
            received = notifications.contains { $0.channel == channel }
            if notifications.isEmpty, let wakeDescriptor, isReadable(wakeDescriptor) { break }
        }
        try listening.execute(script: "UNLISTEN \(channel)")
        return received
    }

    /// Whether two sessions through `conninfo` were served by one server backend: a sign of
    /// a transaction (or statement) pooler. While a second session holds a transaction
    /// open, the first asks for its backend's pid twice; a pooler hands the backend the first
    /// left to the second, or gives the first another. Without a pooler every session has
    /// a backend of its own for its life. A pooler with idle backends to spare can escape
    /// this check; `deliversNotifications` is the test that matters for wake-ups.
    package static func sharesBackends(_ conninfo: String) throws -> Bool {
        let first = try PostgresConnection(conninfo: conninfo)
        let second = try PostgresConnection(conninfo: conninfo)
        let before = try first.query("SELECT pg_backend_pid()").int(0, 0)
        return try second.transaction {
            let held = try second.query("SELECT pg_backend_pid()").int(0, 0)
            let after = try first.query("SELECT pg_backend_pid()").int(0, 0)
            return held == before || after != before
        }
    }

    private static func isReadable(_ descriptor: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0
    }
}
