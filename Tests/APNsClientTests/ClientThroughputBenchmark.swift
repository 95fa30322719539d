import APNsClient
import Foundation
import Testing

/// Not a timed test: prints throughput when PGPUSH_BENCH is set (`PGPUSH_BENCH=1 swift test --filter ClientThroughput`).
@Suite("APNs client throughput (benchmark, opt-in)", .enabled(if: ProcessInfo.processInfo.environment["PGPUSH_BENCH"] != nil))
struct ClientThroughputBenchmark {
    @Test("uncapped: 4 connections, 20,000 requests")
    func uncapped() async throws {
        let server = try FakeAPNsServer(maxConcurrentStreams: 1000)
        defer { server.stop() }
        let client = try server.client(connections: 4, rate: nil)
        await client.start()
        let clock = ContinuousClock()
        let began = clock.now
        let sent = try await ClientTestValues.sendAll(client, count: 20_000)
        let elapsed = began.duration(to: clock.now)
        #expect(sent.allSatisfy { $0.result.status == 200 })
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("uncapped: \(sent.count) requests in \(elapsed), \(Int(Double(sent.count) / seconds)) req/s; \(client.statistics)")
        await client.shutdown()
    }
}
