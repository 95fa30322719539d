@testable import PGPushBench
import PGPushTestSupport
import Postgres
import Testing

@Suite struct BenchMeasurementTests {
    @Test func h2loadSummaryCountsAreRead() throws {
        let output = """
            finished in 20.01s, 999.45 req/s, 66.42KB/s
            requests: 19989 total, 20000 started, 19989 done, 19987 succeeded, 2 failed, 0 errored, 0 timeout
            status codes: 19985 2xx, 0 3xx, 2 4xx, 0 5xx
            """
        #expect(H2LoadCounts(output: output) == H2LoadCounts(requests: 19989, succeeded: 19987, answered2xx: 19985))
        #expect(H2LoadCounts(output: "requests: 10 total, 10 started, 10 done, 10 succeeded") == nil)
        #expect(H2LoadCounts(output: "") == nil)
    }

    @Test func percentilesUseNearestRank() throws {
        let summary = try #require(LatencySummary(milliseconds: (1...100).map(Double.init).reversed()))
        #expect(summary.count == 100)
        #expect(summary.p50 == 50)
        #expect(summary.p90 == 90)
        #expect(summary.p99 == 99)
        #expect(summary.max == 100)
        #expect(LatencySummary(milliseconds: []) == nil)
    }

    @Test func steadyRateIsExactForEvenAndBurstySending() throws {
        // 100/s evenly spaced for 10 s.
        let even = (0..<1000).map { Int64($0 * 10) }
        #expect(try #require(CappedRun.steadyRate(even, cap: 100)) == 100)
        // Each second's 100 requests in a 50 ms burst, bursts 1,020 ms apart: 98.04/s.
        let bursty = (0..<10).flatMap { second in (0..<100).map { Int64(second * 1020 + $0 / 2) } }
        let rate = try #require(CappedRun.steadyRate(bursty, cap: 100))
        #expect(abs(rate - 100_000.0 / 1020) < 0.01)
        #expect(CappedRun.steadyRate([0, 10, 20], cap: 100) == nil)
    }

    @Test func payloadHasTheRequestedSize() {
        for size in [20, 128, 1000] {
            #expect(BenchRows.payload(bytes: size).utf8.count == size)
        }
        #expect(BenchRows.token(255) == String(repeating: "0", count: 62) + "ff")
    }

    @Test func databaseCeilingClaimsAndCompletesEveryRow() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        try BenchRows.fill(connection, count: 2500, payloadBytes: 64)
        #expect(try BenchRows.unfinished(connection) == 2500)
        let result = try DatabaseCeiling.run(conninfo: conninfo, rows: 2500, progress: { _ in })
        #expect(result.rows == 2500)
        #expect(result.claims >= 3)
        #expect(try BenchRows.statusCounts(connection) == ["delivered": 2500])
        #expect(try BenchRows.steadyRate(connection) != nil || result.completes <= 2)
    }
}

@Suite struct DatabaseCostTests {
    /// Another session's inserts and updates, counted once it has ended; the observer's own
    /// polls and snapshots are not counted as commits.
    @Test func countsEveryRowAndCommitOfOtherSessions() throws {
        let conninfo = try TestDatabase.migrated()
        let cluster = try TestDatabase.cluster.get()
        let postmaster = try #require(ProcessCPU.postmasterPID(dataDirectory: cluster.dataDirectory))
        let meter = try CostMeter(conninfo: conninfo, postmaster: postmaster)
        let start = try meter.snapshot()
        do {
            let application = try PostgresConnection(conninfo: conninfo)
            for index in 1...3 {
                try application.query("INSERT INTO pgpush.notifications (device_token, payload) VALUES ($1, $2::jsonb)",
                                      [BenchRows.token(index), BenchRows.payload(bytes: 64)])
            }
            // Not HOT: status is in the partial indexes' predicates, locked_until is indexed.
            try application.query("""
                UPDATE pgpush.notifications SET status = 'sending', locked_by = 'test', locked_until = now() + interval '1 minute'
                 WHERE device_token = $1
                """, [BenchRows.token(1)])
            // HOT: no indexed column changes and the page has room.
            try application.query("UPDATE pgpush.notifications SET attempts = attempts + 1 WHERE device_token = $1",
                                  [BenchRows.token(2)])
            // A second session, idle: starting a session is a transaction of its own (the catalogs are read in one).
            _ = try PostgresConnection(conninfo: conninfo)
        }
        #expect(try meter.poll { try $0.query("SELECT count(*) FROM pgpush.notifications").int(0, 0) } == 3)
        try meter.waitForOtherSessions()
        let end = try meter.snapshot()
        let cost = CostMeter.cost(from: start, to: end, notifications: 3)
        #expect(cost.rowsInserted == 3)
        #expect(cost.notificationUpdates == 2)
        #expect(cost.notificationHOTUpdates == 1)
        #expect(cost.notificationHOTShare == 0.5)
        #expect(cost.rowsDeleted == 0)
        // Five statements, and the two sessions' starts. An autovacuum worker that visits the
        // database meanwhile commits a transaction of its own: on a loaded machine with many
        // test databases (the launcher visits each in turn) it happened once in CI, in a window
        // of 27 s; two such visits at most.
        #expect((7...9).contains(cost.commits), "commits: \(cost.commits)")
        #expect(cost.walBytes > 0)
        #expect(cost.walRecords > 0)
        #expect(try #require(cost.serverCPUSeconds) > 0)
        #expect(cost.problems("test").isEmpty)
    }

    @Test func clusterCPUGrowsWithWork() throws {
        let cluster = try TestDatabase.cluster.get()
        let postmaster = try #require(ProcessCPU.postmasterPID(dataDirectory: cluster.dataDirectory))
        let before = try #require(ProcessCPU.cluster(postmaster: postmaster))
        let connection = try PostgresConnection(conninfo: cluster.conninfo())
        try connection.query("SELECT count(*) FROM generate_series(1, 2000000)")
        let after = try #require(ProcessCPU.cluster(postmaster: postmaster))
        #expect(after - before > 0.01)
        #expect(!ProcessCPU.children(of: postmaster).isEmpty)
    }

    @Test func perNotificationFigures() {
        let cost = DatabaseCost(notifications: 1000, seconds: 2, walBytes: 1_460_000, walRecords: 6000, walFullPageImages: 0,
                                rowsInserted: 1000, rowsUpdated: 2000, hotUpdates: 0, rowsDeleted: 0, notificationUpdates: 2000,
                                notificationHOTUpdates: 0, commits: 40, rollbacks: 0, serverCPUSeconds: 0.1)
        #expect(cost.walBytesPerNotification == 1460)
        #expect(cost.rowsWrittenPerNotification == 3)
        #expect(cost.commitsPerNotification == 0.04)
        #expect(cost.serverCPUMicrosecondsPerNotification == 100)
        #expect(cost.hotShare == 0)
        #expect(cost.serverBusyCPUs == 0.05)
        var empty = cost
        empty.walBytes = 0
        empty.commits = 0
        #expect(empty.problems("x").count == 2)
    }
}
