import Foundation
import PGPushTestSupport
import Postgres
import Testing

/// `HTTPS_PROXY` as `pgpush run` and `pgpush doctor` read it, through Debian's tinyproxy with
/// credentials: rows delivered through the tunnel, `doctor` checks that path, and the proxy's
/// password is in no output, also when the proxy refuses it.
@Suite(.serialized, .enabled(if: ChildProcess.pgpushBinary != nil && TinyProxy.isInstalled,
                             "needs the pgpush binary and tinyproxy (Debian's tinyproxy-bin)"))
struct ProxyCommandTests {
    let binary = ChildProcess.pgpushBinary ?? "pgpush"
    static let password = "pr0xy-Pa55word-never-shown"

    @Test func runAndDoctorGoThroughTheProxyAndNeverShowItsPassword() async throws {
        let tinyproxy = try await TinyProxy.start(credentials: ("alice", Self.password))
        let conninfo = try TestDatabase.migrated()
        let simulated = try CommandLineTests.Simulated(conninfo: conninfo)
        defer { simulated.stop() }
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 30)
        let environment = simulated.environment.merging([
            "HTTPS_PROXY": tinyproxy.url(user: "alice", password: Self.password), "PGPUSH_WORKER_ID": "proxied-cli",
        ]) { $1 }

        let doctor = try ChildProcess(binary, ["doctor"], environment: environment)
        #expect(await doctor.wait(timeout: .seconds(120)) == 0, "\(doctor.output)")
        #expect(doctor.output.contains("through the proxy http://alice:***@127.0.0.1:\(tinyproxy.port)"), "\(doctor.output)")

        let worker = try ChildProcess(binary, ["run"], environment: environment)
        #expect(try await eventually(timeout: .seconds(120)) {
            try CommandLineTests.count(database, "delivered") == 30
        }, "\(worker.lastLines())")
        worker.signal(SIGTERM)
        #expect(await worker.wait(timeout: .seconds(60)) == 0)
        #expect(tinyproxy.connects.contains("127.0.0.1:\(simulated.harness.port)"), "\(tinyproxy.connects)")

        // The wrong password: doctor fails naming the proxy's answer, still without the password.
        let refused = try ChildProcess(binary, ["doctor", "--no-check-apns"], environment: environment.merging([
            "HTTPS_PROXY": tinyproxy.url(user: "alice", password: Self.password + "-wrong"),
        ]) { $1 })
        #expect(await refused.wait(timeout: .seconds(120)) == 1, "\(refused.output)")
        #expect(refused.output.contains("(proxy)") && refused.output.contains("refused the tunnel"), "\(refused.output)")

        for (source, output) in [("doctor", doctor.output), ("run", worker.output), ("doctor, refused", refused.output)] {
            #expect(!output.contains(Self.password), "\(source) printed the proxy's password")
        }
    }
}
