import APNsClient
import APNsSimulator
import Foundation
import PGPushCore
import PGPushTestSupport
import Postgres
import PushWorker
import Testing

/// Channel rows through the worker, over TLS + HTTP/2 to the simulator and real PostgreSQL.
@Suite struct BroadcastDeliveryTests {
    static let update = #"{"aps":{"event":"update","timestamp":1700000000,"content-state":{"score":"2-1"}}}"#
    static let start = #"{"aps":{"event":"start","timestamp":1700000000,"content-state":{"score":"0-0"},"#
        + #""attributes-type":"MatchAttributes","attributes":{"home":"A","away":"B"},"alert":{"title":"Kick-off"}}}"#

    static func run(_ harness: SimulatorHarness, _ conninfo: String, until database: PostgresConnection) async throws {
        let worker = try harness.worker(conninfo: conninfo, id: "broadcast-worker") {
            $0.apps[0].retry = WorkerEndToEndTests.fastRetries()
            $0.pollInterval = .milliseconds(20)
        }
        let running = Task { try await worker.run() }
        try await WorkerEndToEndTests.waitUntilFinished(database)
        worker.stop()
        try await running.value
    }

    @Test func channelRowsGoToTheBroadcastEndpointWithTheirHeadersAndNeverToADevice() async throws {
        let stored = "c3RvcmVkLWNoYW5uZWw=", unstored = "bm8tc3RvcmFnZQ=="
        // Production: APNs sends apns-unique-id there only for broadcasts.
        let harness = try SimulatorHarness(faults: FaultPlan(), logRequests: true) {
            $0.channels = [stored: 1, unstored: 0]
            $0.environment = .production
        }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try database.query("INSERT INTO pgpush.channels (app, channel_id, message_storage_policy) VALUES ('default', $1, 0)", [unstored])
        let token = WorkerEndToEndTests.token(77)
        try database.query("""
            SELECT pgpush.enqueue(channel_id => $1, payload => $2, priority => 5, expires_at => to_timestamp(1900000000)),
                   pgpush.enqueue(channel_id => $3, payload => $2, expires_at => to_timestamp(1900000000)),
                   pgpush.enqueue(device_token => $4, payload => $5, push_type => 'liveactivity')
            """, [stored, Self.update, unstored, token, Self.start])
        try await Self.run(harness, conninfo, until: database)

        let rows = try database.query("""
            SELECT coalesce(channel_id, device_token), status, apns_unique_id IS NOT NULL FROM pgpush.notifications ORDER BY id
            """)
        #expect((0..<3).map { rows.string($0, 1) } == ["delivered", "delivered", "delivered"])
        #expect(rows.bool(0, 2) == true && rows.bool(1, 2) == true && rows.bool(2, 2) == false)
        let report = harness.simulator.report()
        #expect(report.broadcasts(toChannel: stored) == 1 && report.broadcasts(toChannel: unstored) == 1)

        let log = try harness.stopAndReadLog()
        let broadcasts = log.filter { $0.path.hasPrefix("/4/") }
        #expect(broadcasts.count == 2)
        for entry in broadcasts {
            #expect(entry.path == "/4/broadcasts/apps/\(WorkerEndToEndTests.bundleID)")
            #expect(entry.headers["apns-topic"] == nil && entry.headers["apns-push-type"] == "liveactivity")
            #expect(entry.providerToken)
        }
        let byChannel = Dictionary(uniqueKeysWithValues: broadcasts.map { ($0.headers["apns-channel-id"] ?? "", $0.headers) })
        #expect(byChannel[stored]?["apns-priority"] == "5" && byChannel[stored]?["apns-expiration"] == "1900000000")
        // A channel that stores nothing takes only expiration 0, whatever the row asked for.
        #expect(byChannel[unstored]?["apns-priority"] == "10" && byChannel[unstored]?["apns-expiration"] == "0")
        // The only request to /3/device is the token row's start.
        #expect(log.filter { $0.path.hasPrefix("/3/device/") }.map(\.token) == [token])
    }

    /// Every broadcast-specific reason ends the row with it and marks the channel; a 503 is
    /// retried like any other; rows that lack Live Activity fields (written before the
    /// table's rules) fail with the field named and cost no request.
    @Test func everyBroadcastReasonEndsTheRowAndMarksTheChannel() async throws {
        let unknown = "dW5rbm93bg==", delivered = "b2s=", flaky = "Zmxha3k="
        let scripted = ["FeatureNotEnabled": "ZmVhdHVyZQ==", "BadChannelId": "YmFkaWQ=", "MissingChannelId": "bWlzc2luZw=="]
        var faults = FaultPlan()
        faults.channelScripts = Dictionary(uniqueKeysWithValues: try scripted.map { ($0.value, [try ScriptedAnswer(parsing: $0.key)]) })
        faults.channelScripts[flaky] = [try ScriptedAnswer(parsing: "503")]
        let harness = try SimulatorHarness(faults: faults) {
            $0.channels = Dictionary(uniqueKeysWithValues: ([delivered, flaky] + scripted.values).map { ($0, 1) })
        }
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        for channel in [unknown, delivered, flaky] + scripted.values {
            try database.query("SELECT pgpush.enqueue(channel_id => $1, payload => $2)", [channel, Self.update])
        }
        // Rows from before the Live Activity rules: the input rules are dropped to write them.
        try database.query("ALTER TABLE pgpush.notifications DROP CONSTRAINT notifications_input_rules")
        let noTimestamp = #"{"aps":{"event":"update","content-state":{}}}"#
        try database.query("SELECT pgpush.enqueue(channel_id => $1, payload => $2)", [delivered, noTimestamp])
        try database.query("SELECT pgpush.enqueue(device_token => $1, payload => $2, push_type => 'liveactivity')",
                           [WorkerEndToEndTests.token(5), noTimestamp])
        try await Self.run(harness, conninfo, until: database)

        let rows = try WorkerEndToEndTests.counts(database, """
            SELECT coalesce(channel_id, 'token') || ' ' || status || ' ' || coalesce(last_reason, '-'), count(*)
              FROM pgpush.notifications GROUP BY 1
            """)
        var expected = ["\(unknown) failed ChannelNotRegistered": 1, "\(delivered) delivered -": 1, "\(flaky) delivered -": 1,
                        "\(delivered) failed LiveActivityMissingTimestamp": 1, "token failed LiveActivityMissingTimestamp": 1]
        for (reason, channel) in scripted { expected["\(channel) failed \(reason)"] = 1 }
        #expect(rows == expected)
        let marked = try WorkerEndToEndTests.counts(database, """
            SELECT channel_id || ' ' || refused_reason, count(*) FROM pgpush.channels WHERE refused_reason IS NOT NULL GROUP BY 1
            """)
        var expectedMarks = ["\(unknown) ChannelNotRegistered": 1]
        for (reason, channel) in scripted { expectedMarks["\(channel) \(reason)"] = 1 }
        #expect(marked == expectedMarks)
        #expect(try database.query("SELECT attempts FROM pgpush.notifications WHERE channel_id = $1", [flaky]).int(0, 0) == 2)
        // Six channels, one of them twice (the 503): no request for the rows refused before sending.
        #expect(harness.simulator.report().totalRequests == 7)
        #expect(try database.query("SELECT count(*) FROM pgpush.invalid_tokens").int(0, 0) == 0)
    }

    /// Broadcasts share the connections and their cap with device pushes: the simulator sees
    /// no connection go over the cap in any second, counting both.
    @Test func theRateCapCountsBroadcastRequests() async throws {
        let cap = 40
        let channels = (1...60).map { Data("channel-\($0)".utf8).base64EncodedString() }
        let harness = try SimulatorHarness(faults: FaultPlan(), ratePerConnection: cap, connections: 1) {
            $0.channels = Dictionary(uniqueKeysWithValues: channels.map { ($0, 1) })
        }
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        for channel in channels {
            try database.query("SELECT pgpush.enqueue(channel_id => $1, payload => $2)", [channel, Self.update])
        }
        try TestDatabase.enqueueAlerts(database, count: 60)
        try await Self.run(harness, conninfo, until: database)
        let report = harness.simulator.report()
        #expect(report.totalRequests == 120)
        #expect(report.broadcastsByChannel.values.reduce(0, +) == 60)
        #expect(report.connections.count == 1)
        // Same tolerance as the device-only cap test (kernel receive times bunch under load).
        #expect(report.maxRequestsPerConnectionPerSecond <= cap + cap / 4)
    }
}
