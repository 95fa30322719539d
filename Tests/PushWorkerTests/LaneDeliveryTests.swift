import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import PushWorker
import Testing

/// Lanes after the claim (sql/019_claim_says_lane.sql): claimed rows wait for a connection
/// and the rate lane by lane, with a worker sending to the APNs simulator over TLS + HTTP/2.
@Suite struct LaneDeliveryTests {
    /// A worker at its cap (two connections at 100/s) holds a second's worth of bulk rows
    /// claimed and waiting: 200. A one-time code inserted then waits for a claim with room
    /// (a quarter of that window, 50 sends) and goes before every bulk row still waiting. In
    /// one line with them it went after about 150 to 200 of them.
    @Test func anUrgentRowClaimedBehindAFullWindowGoesFirst() async throws {
        let harness = try SimulatorHarness(ratePerConnection: 100, connections: 2, logRequests: true)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try database.query("""
            INSERT INTO pgpush.notifications (device_token, payload, lane)
            SELECT lpad(to_hex(g), 64, '0'), '{"aps":{"alert":"campaign"}}', 'bulk' FROM generate_series(1, 1500) AS g
            """)
        let (worker, running) = try DailyOperationsDeliveryTests.runWorker(harness, conninfo: conninfo, id: "lanes")
        defer { worker.stop() }
        // Well past the first second: the window of claimed rows is full and being paced.
        #expect(try await eventually(timeout: .seconds(120)) { harness.simulator.report().totalRequests >= 400 })
        let code = String(repeating: "c0de", count: 16)
        let handledBefore = harness.simulator.report().totalRequests
        try database.query("""
            INSERT INTO pgpush.notifications (device_token, payload, lane) VALUES ($1, '{"aps":{"alert":"123456"}}', 'urgent')
            """, [code])
        #expect(try await eventually(timeout: .seconds(120)) {
            try database.query("SELECT status FROM pgpush.notifications WHERE device_token = $1", [code]).string(0, 0) == "delivered"
        })
        worker.stop()
        try await running.value
        let log = try harness.stopAndReadLog()
        let position = try #require(log.firstIndex { $0.token == code })
        let between = position - handledBefore
        #expect(between < 120, "\(between) bulk requests went between the urgent row's insert and its request")
        #expect(log[..<position].allSatisfy { $0.token != code })
    }
}
