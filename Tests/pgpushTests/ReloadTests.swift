import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import PushCrypto
import Testing

/// SIGHUP (`pgpush run`): the configuration and every key file read again; the worker goes
/// on in the same process with what loaded, or as it was when nothing did.
@Suite(.enabled(if: ChildProcess.pgpushBinary != nil, "the pgpush binary is built by `swift build` before the tests"))
struct ReloadTests {
    let binary = ChildProcess.pgpushBinary ?? "pgpush"
    static let rotatedKeyID = "KEY7654321"

    static func count(_ database: PostgresConnection, _ status: String) throws -> Int {
        try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = $1", [status]).int(0, 0) ?? 0
    }

    /// The worker's configuration file, replaced whole (as an editor or a deploy would).
    static func writeConfiguration(_ harness: SimulatorHarness, keyID: String, keyFile: String, to path: String) throws {
        let json = """
            {"apps": [{"name": "default", "topic": "\(harness.bundleID)", "apns_url": "\(harness.baseURL)",
                       "ca_file": "\(harness.caFile)", "team_id": "\(harness.teamID)", "key_id": "\(keyID)",
                       "key_file": "\(keyFile)", "connections": 2, "rate_per_connection": 20}]}
            """
        try Data(json.utf8).write(to: URL(fileURLWithPath: path + ".new"))
        guard rename(path + ".new", path) == 0 else { throw TestSetupError("rename failed: errno \(errno)") }
    }

    /// A key rotated on disk and SIGHUP while rows are being sent: no row fails, none is
    /// lost, the pid is unchanged, the requests after the reload are signed with the new key,
    /// and the log says which key, never the key. Before it, a configuration naming a missing
    /// key file is refused with a line naming the setting, and the worker goes on with the key
    /// in force. Rows are added phase by phase, so that each phase has rows to send however
    /// slow the machine.
    @Test func aKeyRotatedOnDiskIsTakenOnSIGHUPAndNoRowIsLost() async throws {
        let rotated = try ES256PrivateKey.generate()
        let harness = try SimulatorHarness(logRequests: true) { configuration in
            configuration.otherTokenKeys = [ProviderTokenKey(teamID: "TEAM123456", keyID: Self.rotatedKeyID,
                                                             publicKey: try rotated.publicKey())]
        }
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        var enqueued = 0
        func enqueue(_ count: Int) throws {
            try database.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{\"aps\":{\"alert\":\"x\"}}')",
                               [(enqueued + 1...enqueued + count).map { String(format: "%064x", $0) }])
            enqueued += count
        }
        let configuration = harness.directory.appendingPathComponent("pgpush.json").path
        try Self.writeConfiguration(harness, keyID: harness.keyID, keyFile: harness.keyFile, to: configuration)
        let worker = try ChildProcess(binary, ["run", "--config", configuration],
                                      environment: ["DATABASE_URL": conninfo, "PGPUSH_WORKER_ID": "reloader"])
        try enqueue(40)
        #expect(try await eventually { try Self.count(database, "delivered") == enqueued }, "\(worker.lastLines())")

        // Refused: the file names a key that is not there. Nothing changes; sending goes on.
        try Self.writeConfiguration(harness, keyID: Self.rotatedKeyID, keyFile: "/nonexistent/AuthKey.p8", to: configuration)
        worker.signal(SIGHUP)
        #expect(await worker.waitForOutput(containing: "reload_refused", timeout: .seconds(120)), "\(worker.lastLines())")
        let refusal = worker.output.split(separator: "\n").first { $0.contains("reload_refused") } ?? ""
        #expect(refusal.contains("/nonexistent/AuthKey.p8") && refusal.lowercased().contains("key"), "\(refusal)")
        try enqueue(40)
        #expect(try await eventually { try Self.count(database, "delivered") == enqueued }, "\(worker.lastLines())")
        let beforeRotation = harness.simulator.report().totalRequests

        // Rotated: a new key file and key id, taken while a backlog of 200 rows (5 s at 40/s) is sent.
        let rotatedFile = harness.directory.appendingPathComponent("AuthKey-rotated.p8").path
        try rotated.writePKCS8(toFile: rotatedFile)
        try Self.writeConfiguration(harness, keyID: Self.rotatedKeyID, keyFile: rotatedFile, to: configuration)
        try enqueue(200)
        #expect(try await eventually { try Self.count(database, "delivered") > 80 + 10 }, "\(worker.lastLines())")
        worker.signal(SIGHUP)
        #expect(await worker.waitForOutput(containing: "key_id=\(Self.rotatedKeyID)", timeout: .seconds(120)), "\(worker.lastLines())")
        // And rows enqueued after the reload, sent with the new key whatever the backlog's pace.
        try enqueue(20)
        #expect(try await eventually(timeout: .seconds(240)) { try Self.count(database, "delivered") == enqueued },
                "\(worker.lastLines())")
        #expect(!worker.hasExited, "the worker exited: \(worker.lastLines())")
        worker.signal(SIGTERM)
        #expect(await worker.wait(timeout: .seconds(60)) == 0, "\(worker.lastLines())")

        let outcomes = try database.query("SELECT string_agg(DISTINCT status, ',') FROM pgpush.notifications").string(0, 0)
        #expect(outcomes == "delivered")
        #expect(try database.query("SELECT count(*) FROM pgpush.delivery_errors").int(0, 0) == 0)
        let log = try harness.stopAndReadLog()
        let keys = log.compactMap(\.providerTokenKeyID)
        #expect(Set(keys.prefix(beforeRotation)) == [harness.keyID], "\(Set(keys))")
        #expect(keys.last == Self.rotatedKeyID && keys.suffix(20).allSatisfy { $0 == Self.rotatedKeyID }, "\(keys.suffix(20))")
        let change = worker.output.split(separator: "\n").first { $0.contains("reload_change") } ?? ""
        #expect(change.contains("app=default") && change.contains("setting=key_file") && change.contains("change=changed"), "\(change)")
        for line in try String(contentsOfFile: rotatedFile, encoding: .utf8).split(separator: "\n") where !line.hasPrefix("-----") {
            #expect(!worker.output.contains(line), "the log shows the key")
        }
    }
}
