import APNsSimulator
import Foundation
import Locking
import PGPushTestSupport
import Postgres
import PushWorker
import Testing

/// Whatever happens, a log line never carries a JWT or key material.
@Suite struct SecretsStayOutOfLogsTests {
    @Test func workerLogsNoJWTAndNoKey() async throws {
        var faults = FaultPlan()
        faults.unregisteredTokens = [WorkerEndToEndTests.token(1)]
        faults.scripts = [WorkerEndToEndTests.token(2): [try ScriptedAnswer(parsing: "ExpiredProviderToken"),
                                                        try ScriptedAnswer(parsing: "InvalidProviderToken")]]
        let harness = try SimulatorHarness(faults: faults)
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 5)
        let lines = Locked<[String]>([])
        let worker = try harness.worker(conninfo: conninfo, id: "secrets",
                                        log: Log(minimum: .debug, sink: { line in lines.withLock { $0.append(line) } })) {
            $0.pollInterval = .milliseconds(20)
        }
        let running = Task { try await worker.run() }
        #expect(try await eventually(timeout: .seconds(180)) {
            try database.query("SELECT count(*) FROM pgpush.delivery_errors").int(0, 0) ?? 0 >= 2
        })
        worker.stop()
        try await running.value
        let keyFile = harness.directory.appendingPathComponent("AuthKey.p8").path
        let keyBody = try String(contentsOfFile: keyFile, encoding: .utf8).split(separator: "\n").dropFirst().first.map(String.init) ?? "?"
        let log = lines.withLock { $0.joined() }
        #expect(log.contains("send_error"))
        #expect(!log.contains("eyJ"), "a JWT header (base64url of {\"alg\"…) reached the log")
        #expect(!log.contains("PRIVATE KEY"))
        #expect(!log.contains(keyBody))
        #expect(!log.lowercased().contains("bearer"))
    }
}
