import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import Testing

extension Reliability {
    /// The rate cap where APNs counts it: at the wire. Several `pgpush run` processes,
    /// each with several connections, drain a backlog at the cap while tcpdump captures
    /// loopback and tshark decrypts it with the workers' `SSLKEYLOGFILE`. No connection
    /// may carry more than the cap in any one-second window, wherever the window starts,
    /// and none may be starved by it while it has work and nothing holds it up
    /// (`WireRate.unhinderedRate`: with one core kept busy, worker processes sometimes
    /// stall for a few hundred milliseconds, which is the machine, not the cap).
    /// How close to the cap a connection keeps is a figure of `pgpush bench` (capped runs).
    /// The first second is left out of the rate: one request alone until APNs has
    /// answered the JWT, the worker's first claims.
    ///
    /// Eight processes of four connections on two cores is the load under which counting
    /// at submission was seen to let 101–106 requests through in a second at the wire; at
    /// that load the machine itself could no longer give every connection 60 requests in
    /// any second (50.6/s by the quickest tenth of spans, 68.8/s by the quickest span, on
    /// 0.3.0 as on 0.4.0), so six processes: 2,400 requests/s on two cores, still well past
    /// what the submission bug needed.
    @Suite struct WireRateCapTests {
        static let workers = 6
        static let connections = 4
        static let ratePerConnection = 100

        @Test(.enabled(if: ChildProcess.pgpushBinary != nil, WorkerProcess.missingBinary),
              .enabled(if: WireCapture.available || WireCapture.required, WireCapture.unavailable))
        func noConnectionExceedsTheCapAtTheWire() async throws {
            let binary = try #require(ChildProcess.pgpushBinary, WorkerProcess.missingBinary)
            let seconds = ReliabilityMode.pick(ci: 6, long: 30)
            let rows = Self.workers * Self.connections * Self.ratePerConnection * seconds
            let harness = try SimulatorHarness.reliability(faults: FaultPlan())
            defer { harness.stop() }
            try harness.start()
            let conninfo = try TestDatabase.migrated()
            let database = try PostgresConnection(conninfo: conninfo)
            try Backlog.enqueue(database, count: rows)

            let keyLog = harness.directory.appendingPathComponent("tls-keys.log").path
            let capture = try await WireCapture.start(port: harness.port,
                                                      file: harness.directory.appendingPathComponent("wire.pcap").path)
            var launcher = WorkerLauncher(binary: binary, harness: harness, conninfo: conninfo, connections: Self.connections,
                                          ratePerConnection: Self.ratePerConnection, idPrefix: "wire",
                                          extra: ["SSLKEYLOGFILE": keyLog])
            let workers = try (0..<Self.workers).map { _ in try launcher.launch() }
            let settled = await Backlog.waitUntilSettled(conninfo: conninfo, timeout: .seconds(Double(seconds) * 20 + 60))
            for worker in workers { worker.signal(SIGTERM) }
            for worker in workers { await worker.wait() }
            let dropped = try await capture.stop()
            #expect(settled, "rows still open; last worker log:\n\(workers.last?.logTail() ?? "")")
            #expect(dropped == 0, "tcpdump dropped \(dropped) packets: the capture is incomplete")

            // The key log is opt-in and announced: each worker said so at start.
            for worker in workers {
                let log = try String(contentsOfFile: worker.logFile, encoding: .utf8)
                #expect(log.contains("tls_key_log") && log.contains(keyLog), "no key-log warning in \(worker.logFile)")
            }
            let attributes = try FileManager.default.attributesOfItem(atPath: keyLog)
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "the key log must be readable by its owner only")

            let requests = try capture.requests(keyLog: keyLog)
            let delivered = try Backlog.count(database, "status = 'delivered'")
            // One request per delivered row, nothing retried here; the capture holds them all
            // (tcpdump dropped nothing), but tshark's HTTP/2 dissector now and then fails to read
            // a HEADERS frame it was given (2 of 19,200 in one CI run). A few unread frames can
            // hide at most that many requests from a window; a request counted twice cannot pass.
            let seen = requests.values.reduce(0) { $0 + $1.count }
            #expect(seen <= delivered && delivered - seen <= max(2, delivered / 2_000),
                    "requests seen at the wire (\(seen)) vs rows delivered (\(delivered))")
            #expect(delivered == rows)
            #expect(requests.count == Self.workers * Self.connections, "connections seen at the wire")

            // While every connection still had work: up to the first one's last request.
            let end = requests.values.compactMap(\.last).min() ?? 0
            var summary: [String] = []
            for (stream, times) in requests.sorted(by: { $0.key < $1.key }) {
                let rate = WireRate(times: times, end: end, limit: Self.ratePerConnection)
                summary.append("\(stream): max \(rate.busiestSecond), unhindered \(String(format: "%.2f", rate.unhinderedRate))/s, "
                               + "windows \(rate.windows)")
                #expect(rate.busiestSecond <= Self.ratePerConnection,
                        "connection \(stream) carried \(rate.busiestSecond) requests in one second at the wire")
                #expect(rate.windows.count >= seconds / 2, "connection \(stream) had too few whole seconds of work: \(rate.windows)")
                // The cap must not starve a connection: a request counted twice would halve the
                // rate. How close to 100/s its quickest spans come is the machine's as much as
                // pgpush's: 99.3–99.8/s on a quiet machine, 97.5/s with one core kept busy, 94.0/s
                // with the machine also building three checkouts, 79/s for two of eight worker
                // processes in one CI run, 79.2–97.5/s for six in four runs (quickest span);
                // the bench's capped runs measure it.
                #expect(rate.unhinderedRate >= Double(Self.ratePerConnection) * 0.6,
                        "connection \(stream) kept \(rate.unhinderedRate)/s of \(Self.ratePerConnection)/s: \(rate.windows)")
            }
            print("reliability[wire] \(Self.workers) workers × \(Self.connections) connections, \(rows) rows:\n  "
                  + summary.joined(separator: "\n  "))
        }
    }
}
