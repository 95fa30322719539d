import Foundation
import PGPushCore
import PGPushTestSupport
import Postgres
import PushQueue
import Testing

/// The dead-token feed (sql/018_daily_operations.sql): a token newly listed in
/// invalid_tokens is announced on pgpush_invalid_token, once.
@Suite struct InvalidTokenFeedTests {
    static let token = String(repeating: "C3", count: 32)

    private func heard(_ listener: PostgresConnection, waitingUpTo attempts: Int = 100) throws -> [PostgresNotification] {
        var heard: [PostgresNotification] = []
        for _ in 0..<attempts where heard.isEmpty { heard = try listener.waitForNotifications(timeout: .milliseconds(100)) }
        return heard
    }

    /// A worker's outcome that lists a token announces it, as JSON with app, service, token
    /// (as listed: an APNs token in lower case) and reason; the same token refused again
    /// updates its row and is not announced again.
    @Test func aNewlyListedTokenIsAnnouncedOnce() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        // LISTEN needs a session: through a transaction pooler, a direct connection.
        let listener = try PostgresConnection(conninfo: try TestDatabase.session(conninfo))
        try listener.listen("pgpush_invalid_token")
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        func refuseNext() throws {
            try connection.query("INSERT INTO pgpush.notifications (app, device_token, payload) VALUES ('shop', $1, '{}')", [Self.token])
            let row = try #require(try queue.claim(app: "shop", limit: 1, lease: .seconds(30), skipKnownInvalidTokens: false)
                .claimed.first)
            try queue.complete([Outcome(id: row.id, claimCount: row.claimCount, disposition: .failed, httpStatus: 410,
                                        reason: "Unregistered", recordsError: true, invalidatesToken: true)])
        }
        try refuseNext()
        let first = try heard(listener)
        #expect(first.count == 1 && first.first?.channel == "pgpush_invalid_token")
        let json = try #require(first.first.flatMap { JSONValue.parse(Array($0.payload.utf8)) })
        guard case .object(let members) = json else { Issue.record("not an object: \(first)"); return }
        #expect(members["app"]?.stringValue == "shop" && members["service"]?.stringValue == "apns")
        #expect(members["token"]?.stringValue == Self.token.lowercased() && members["reason"]?.stringValue == "Unregistered")

        try refuseNext()
        #expect(try connection.query("SELECT times_seen FROM pgpush.invalid_tokens").int(0, 0) == 2)
        #expect(try heard(listener, waitingUpTo: 5).isEmpty)
        // Registered again, then refused again: newly listed, announced again.
        try connection.query("SELECT pgpush.token_registered('shop', $1)", [Self.token])
        try refuseNext()
        #expect(try heard(listener).count == 1)
    }

    /// Where tenants must not learn each other's dead tokens, the feed is switched off for
    /// the workers' role (or database): nothing is announced, the token is still listed.
    @Test func theFeedCanBeSwitchedOff() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        // LISTEN needs a session: through a transaction pooler, a direct connection.
        let listener = try PostgresConnection(conninfo: try TestDatabase.session(conninfo))
        try listener.listen("pgpush_invalid_token")
        // As ALTER ROLE … SET would set it for the workers' sessions; one transaction, so that
        // through a transaction pooler the setting and the insert share a server connection.
        try connection.transaction {
            try connection.execute(script: "SET LOCAL pgpush.invalid_token_feed = off")
            try connection.query("INSERT INTO pgpush.invalid_tokens (app, service, device_token, reason) VALUES ('shop', 'fcm', 'x', 'UNREGISTERED')")
        }
        #expect(try heard(listener, waitingUpTo: 5).isEmpty)
        #expect(try connection.query("SELECT count(*) FROM pgpush.invalid_tokens").int(0, 0) == 1)
    }
}
