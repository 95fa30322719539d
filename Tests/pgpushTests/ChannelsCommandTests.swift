import APNsSimulator
import Foundation
import PGPushTestSupport
import Postgres
import Testing

/// `pgpush channels` as users run it, against the simulator's management API over TLS and a
/// real PostgreSQL: every answer kept in pgpush.channels, errors said in words.
@Suite(.enabled(if: ChildProcess.pgpushBinary != nil, "the pgpush binary is built by `swift build` before the tests"))
struct ChannelsCommandTests {
    let binary = ChildProcess.pgpushBinary ?? "pgpush"

    func channels(_ arguments: [String], _ simulated: CommandLineTests.Simulated) async throws -> (code: Int32?, output: String) {
        let environment = simulated.environment.merging(["PGPUSH_APNS_CHANNELS_URL": simulated.simulator.baseURL ?? ""]) { $1 }
        let child = try ChildProcess(binary, ["channels"] + arguments + ["--app", "default"], environment: environment)
        let code = await child.wait(timeout: .seconds(120))
        return (code, child.output)
    }

    static func object(_ output: String) throws -> [String: Any] {
        let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("{") })
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func createListShowDeleteKeepTheTableInStep() async throws {
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        var faults = FaultPlan()
        // The first create meets a 429 (retried) and then the channel limit.
        faults.managementScript = [try ScriptedAnswer(parsing: "TooManyRequests"), try ScriptedAnswer(parsing: "CannotCreateChannelConfig")]
        let simulated = try CommandLineTests.Simulated(conninfo: conninfo, faults: faults)
        defer { simulated.stop() }

        let limited = try await channels(["create", "--json"], simulated)
        #expect(limited.code == 1)
        #expect(limited.output.contains("10,000 per app and environment"), "\(limited.output)")
        #expect(limited.output.contains("after 2 attempts"), "\(limited.output)")

        let created = try await channels(["create", "--storage-policy", "0", "--json"], simulated)
        #expect(created.code == 0, "\(created.output)")
        let channel = try #require(try Self.object(created.output)["channel_id"] as? String)
        let other = try #require(try Self.object(try await channels(["create", "--json"], simulated).output)["channel_id"] as? String)
        let row = try database.query("SELECT message_storage_policy, environment, deleted_at IS NULL FROM pgpush.channels WHERE channel_id = $1",
                                     [channel])
        #expect(row.int(0, 0) == 0 && row.string(0, 1) == "production" && row.bool(0, 2) == true)

        // list: a channel missing from the table is recorded again; one APNs no longer lists is marked deleted.
        try database.query("DELETE FROM pgpush.channels WHERE channel_id = $1", [other])
        try database.query("INSERT INTO pgpush.channels (app, channel_id, message_storage_policy, environment) VALUES ('default', 'c3RhbGU=', 1, 'production')")
        let listed = try await channels(["list"], simulated)
        #expect(listed.code == 0 && listed.output.contains("2 channel(s)") && listed.output.contains(other), "\(listed.output)")
        #expect(try database.query("SELECT deleted_at IS NOT NULL FROM pgpush.channels WHERE channel_id = 'c3RhbGU='").bool(0, 0) == true)
        #expect(try database.query("SELECT count(*) FROM pgpush.channels WHERE channel_id = $1", [other]).int(0, 0) == 1)

        // show reads the storage policy back into the table.
        let shown = try await channels(["show", "--channel", other, "--json"], simulated)
        #expect(try Self.object(shown.output)["message_storage_policy"] as? Int == 1)
        #expect(try database.query("SELECT message_storage_policy FROM pgpush.channels WHERE channel_id = $1", [other]).int(0, 0) == 1)

        let deleted = try await channels(["delete", "--channel", channel], simulated)
        #expect(deleted.code == 0, "\(deleted.output)")
        #expect(try database.query("SELECT deleted_at IS NOT NULL FROM pgpush.channels WHERE channel_id = $1", [channel]).bool(0, 0) == true)
        let gone = try await channels(["show", "--channel", channel], simulated)
        #expect(gone.code == 1 && gone.output.contains("ChannelNotRegistered") && gone.output.contains("knows no such channel"), "\(gone.output)")

        let usage = try await channels(["delete"], simulated)
        #expect(usage.code == 2 && usage.output.contains("--channel"))
        #expect(simulated.simulator.report().managementRequests == 8)
    }
}
