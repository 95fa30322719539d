import Foundation
import PGPushCore
import PGPushTestSupport
import Postgres
import PushQueue
import Testing

/// sql/010_broadcast_channels.sql and the queue's handling of channel rows, as the real roles.
@Suite(.serialized) struct ChannelRowsTests {
    static let channel = "Y2hhbm5lbC1vbmU="
    static let update = BadInputTests.liveActivityUpdate
    static let token = String(repeating: "0b", count: 32)

    @Test func enqueueByChannelMakesAChannelRowAndTokenCallsStillWork() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let first = try connection.query("SELECT pgpush.enqueue(channel_id => $1, payload => $2, priority => 5, idempotency_key => 'k')",
                                         [Self.channel, Self.update]).int64(0, 0)
        let again = try connection.query("SELECT pgpush.enqueue(channel_id => $1, payload => $2, priority => 5, idempotency_key => 'k')",
                                         [Self.channel, Self.update]).int64(0, 0)
        #expect(first != nil && first == again)
        let row = try connection.query("SELECT device_token IS NULL, channel_id, push_type, priority FROM pgpush.notifications WHERE id = $1",
                                       [first])
        #expect(row.bool(0, 0) == true && row.string(0, 1) == Self.channel && row.string(0, 2) == "liveactivity")
        #expect(row.int(0, 3) == 5)
        // Calls written for device tokens, by name and by position, match only the token function.
        _ = try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => '{}')", [Self.token])
        _ = try connection.query("SELECT pgpush.enqueue('\(Self.token)', '{\"aps\":{}}')")
        #expect(try connection.query("SELECT count(*) FROM pgpush.notifications WHERE channel_id IS NULL").int(0, 0) == 2)
        // A broadcast may be 5,120 bytes (a token row of the same type 4,096).
        _ = try connection.query("SELECT pgpush.enqueue(channel_id => $1, payload => $2)", [Self.channel, BadInputTests.liveActivity(bytes: 5120)])
        let tooLarge = try #require(throws: PostgresError.self) {
            try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => $2, push_type => 'liveactivity')",
                                 [Self.token, BadInputTests.liveActivity(bytes: 4097)])
        }
        #expect(tooLarge.constraint == "notifications_payload_too_large")
    }

    @Test func claimCarriesTheChannelAndItsStoragePolicyAndSkipsDeletedChannels() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        let noStorage = "bm8tc3RvcmFnZQ==", deleted = "ZGVsZXRlZA=="
        try connection.query("""
            INSERT INTO pgpush.channels (app, channel_id, message_storage_policy, deleted_at)
            VALUES ('default', $1, 1, NULL), ('default', $2, 0, NULL), ('default', $3, 1, now())
            """, [Self.channel, noStorage, deleted])
        var ids: [String: Int64] = [:]
        for channel in [Self.channel, noStorage, deleted] {
            ids[channel] = try connection.query("SELECT pgpush.enqueue(channel_id => $1, payload => $2)", [channel, Self.update]).int64(0, 0)
        }
        let queue = NotificationQueue(connection: try PostgresConnection(conninfo: conninfo), workerID: "w")
        let result = try queue.claim(app: "default", limit: 10, lease: .seconds(30))
        let byChannel = Dictionary(uniqueKeysWithValues: result.claimed.map { ($0.notification.channelID ?? "", $0.notification) })
        #expect(Set(byChannel.keys) == [Self.channel, noStorage])
        #expect(byChannel[Self.channel]?.deliverOnce == nil)
        #expect(byChannel[noStorage]?.deliverOnce == true)
        #expect(result.knownInvalidIDs == [try #require(ids[deleted])])
        let refused = try connection.query("""
            SELECT n.status, n.last_reason, e.channel_id, e.device_token IS NULL FROM pgpush.notifications n
              JOIN pgpush.delivery_errors e ON e.notification_id = n.id WHERE n.id = $1
            """, [ids[deleted]])
        #expect(refused.string(0, 0) == "failed" && refused.string(0, 1) == "KnownDeletedChannel")
        #expect(refused.string(0, 2) == deleted && refused.bool(0, 3) == true)
    }

    /// A broadcast refused for its channel marks the channel (making its row when pgpush did
    /// not create it); the worker does this with its own role's rights.
    @Test func refusedBroadcastMarksTheChannelAsTheWorkerRole() throws {
        let setup = try RolesTests.Setup()
        let known = "a25vd24=", unknown = "dW5rbm93bg=="
        try setup.worker.query("INSERT INTO pgpush.channels (app, channel_id, message_storage_policy) VALUES ('default', $1, 1)", [known])
        for channel in [known, unknown] {
            _ = try setup.app.query("SELECT pgpush.enqueue(channel_id => $1, payload => $2)", [channel, Self.update])
        }
        let queue = NotificationQueue(connection: setup.worker, workerID: "w")
        let claimed = try queue.claim(app: "default", limit: 10, lease: .seconds(30)).claimed
        #expect(claimed.count == 2)
        let outcomes = claimed.map {
            Outcome(id: $0.id, claimCount: $0.claimCount, disposition: .failed, httpStatus: 400, reason: "ChannelNotRegistered",
                    recordsError: true, invalidatesToken: true)
        }
        #expect(try queue.complete(outcomes).count == 2)
        let marked = try setup.owner.query("SELECT channel_id, refused_reason, message_storage_policy FROM pgpush.channels ORDER BY channel_id")
        #expect(marked.rowCount == 2)
        #expect((0..<2).allSatisfy { marked.string($0, 1) == "ChannelNotRegistered" })
        #expect(marked.string(0, 0) == known && marked.int(0, 2) == 1)
        #expect(marked.string(1, 0) == unknown && marked.int(1, 2) == nil)
        #expect(try setup.owner.query("SELECT count(*) FROM pgpush.invalid_tokens").int(0, 0) == 0)
        #expect(try setup.owner.query("SELECT count(*) FROM pgpush.delivery_errors WHERE channel_id IS NOT NULL").int(0, 0) == 2)
    }

    @Test func eachRoleSeesAndChangesWhatChannelsAllowIt() throws {
        let setup = try RolesTests.Setup()
        let other = try setup.login("other", group: "pgpush_app", apps: ["other"])
        try setup.owner.query("""
            INSERT INTO pgpush.channels (app, channel_id, message_storage_policy) VALUES ('default', $1, 1), ('other', $1, 0)
            """, [Self.channel])
        // Applications: their own apps' channels, read only; channel rows like token rows.
        #expect(try setup.app.query("SELECT app FROM pgpush.channels").rowCount == 1)
        #expect(try other.query("SELECT app FROM pgpush.channels").string(0, 0) == "other")
        _ = try setup.app.query("SELECT pgpush.enqueue(channel_id => $1, payload => $2)", [Self.channel, Self.update])
        try setup.app.query("INSERT INTO pgpush.notifications (channel_id, payload, push_type) VALUES ($1, $2, 'liveactivity')",
                            [Self.channel, Self.update])
        let foreign = try #require(throws: PostgresError.self) {
            try setup.app.query("SELECT pgpush.enqueue(channel_id => $1, payload => $2, app => 'other')", [Self.channel, Self.update])
        }
        #expect(foreign.sqlState == "42501")
        for denied in ["INSERT INTO pgpush.channels (app, channel_id) VALUES ('default', 'YQ==')",
                       "UPDATE pgpush.channels SET deleted_at = now()", "DELETE FROM pgpush.channels"] {
            #expect(throws: PostgresError.self) { try setup.app.query(denied) }
        }
        // Worker: records and marks channels, never deletes them or changes their ids.
        try setup.worker.query("INSERT INTO pgpush.channels (app, channel_id, message_storage_policy) VALUES ('default', 'Yg==', 0)")
        #expect(try setup.worker.query("UPDATE pgpush.channels SET deleted_at = now() WHERE channel_id = 'Yg=='").affectedRows == 1)
        #expect(throws: PostgresError.self) { try setup.worker.query("UPDATE pgpush.channels SET channel_id = 'Yw=='") }
        #expect(throws: PostgresError.self) { try setup.worker.query("DELETE FROM pgpush.channels") }
        // Monitor: states and times, not the ids.
        #expect(try setup.monitor.query("SELECT app, message_storage_policy, deleted_at, refused_reason FROM pgpush.channels").rowCount == 3)
        #expect(throws: PostgresError.self) { try setup.monitor.query("SELECT channel_id FROM pgpush.channels") }
        #expect(throws: PostgresError.self) { try setup.monitor.query("SELECT channel_id FROM pgpush.notifications") }
    }

    /// Unfinished Live Activity rows written before 010 without the fields it requires end
    /// failed with BrokeInputRules (instead of failing every later claim of their app); rows
    /// that pass stay queued.
    @Test func migrationEndsUnfinishedRowsTheNewRulesRefuse() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.empty())
        let all = try Migration.load(directory: TestDatabase.sqlDirectory)
        try MigrationRunner(migrations: all.filter { $0.version < 10 }).migrate(connection)
        try connection.query("""
            INSERT INTO pgpush.notifications (device_token, payload, push_type, priority)
            VALUES ($1, '{"aps":{"alert":"no event"}}', 'liveactivity', 10), ($1, $2, 'liveactivity', 10)
            """, [Self.token, Self.update])
        try MigrationRunner(migrations: all).migrate(connection)
        let rows = try connection.query("SELECT status, last_reason FROM pgpush.notifications ORDER BY id")
        #expect(rows.string(0, 0) == "failed" && rows.string(0, 1) == "BrokeInputRules")
        #expect(rows.string(1, 0) == "queued")
        #expect(try connection.query("SELECT reason FROM pgpush.delivery_errors").string(0, 0) == "BrokeInputRules")
        // Run again by hand: nothing fails, nothing changes.
        let migration = try #require(all.first { $0.version == 10 })
        try connection.transaction { try connection.execute(script: migration.sql) }
        #expect(try connection.query("SELECT count(*) FROM pgpush.delivery_errors").int(0, 0) == 1)
    }
}
