@testable import PGPushBench
import PGPushTestSupport
import Postgres
import Testing

@Suite struct BenchMeasurementTests {
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
