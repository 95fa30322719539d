import Foundation
import HTTP2TLS
import Locking
import PGPushTestSupport
import Postgres
import PushWorker
import Testing

/// Egress through an HTTP CONNECT proxy (`HTTPS_PROXY`, `--proxy`), tested against Debian's
/// tinyproxy: every row through it, with credentials that appear in no output; a proxy that
/// refuses pauses the app's sending with a reason that says so, and no row is spent; hosts
/// NO_PROXY names are reached directly.
@Suite(.serialized, .enabled(if: TinyProxy.isInstalled, "tinyproxy (Debian's tinyproxy-bin) is not installed"))
struct ProxyTests {
    static let password = "pr0xy-Pa55word-never-shown"

    struct Run {
        let worker: Worker
        let running: Task<Void, any Error>
        let log: Locked<[String]>

        func stop() async throws {
            worker.stop()
            try await running.value
        }
    }

    static func run(_ harness: SimulatorHarness, conninfo: String, proxy: HTTPProxy, id: String) throws -> Run {
        var app = harness.app(connections: 2, ratePerConnection: 100)
        app.proxy = proxy
        let log = Locked<[String]>([])
        var configuration = WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: id)
        configuration.drainTimeout = .seconds(5)
        let worker = try Worker(configuration: configuration, senders: try SenderFactory.makeSenders(for: [app]),
                                log: Log(sink: { line in log.withLock { $0.append(line) } }))
        return Run(worker: worker, running: Task { try await worker.run() }, log: log)
    }

    static func count(_ database: PostgresConnection, _ status: String) throws -> Int {
        try database.query("SELECT count(*) FROM pgpush.notifications WHERE status = $1", [status]).int(0, 0) ?? 0
    }

    @Test func everyRowGoesThroughTheProxyAndItsPasswordIsNeverShown() async throws {
        let tinyproxy = try await TinyProxy.start(credentials: ("alice", Self.password))
        let harness = try SimulatorHarness()
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 50)
        let run = try Self.run(harness, conninfo: conninfo, proxy: try HTTPProxy(url: tinyproxy.url(user: "alice", password: Self.password)),
                               id: "proxied")
        #expect(try await eventually(timeout: stateWaitLimit) { try Self.count(database, "delivered") == 50 },
                "\(run.log.withLock { $0 })\n\(tinyproxy.log)")
        try await run.stop()
        // Both connections went through the tunnel: tinyproxy was asked for the simulator.
        let tunnels = tinyproxy.connects.filter { $0 == "127.0.0.1:\(harness.port)" }
        #expect(tunnels.count >= 2, "\(tinyproxy.connects)\n\(tinyproxy.log)")
        #expect(harness.simulator.report().totalRequests == 50)
        let output = run.log.withLock { $0.joined() }
        #expect(!output.contains(Self.password))
    }

    /// 407 (credentials missing) and 403 (the proxy does not tunnel to that port): the
    /// app's APNs sending pauses with `ProxyRefused` and the status in `app_health`, the rows
    /// stay queued with no attempt spent, and the connection failure is logged and counted
    /// with cause `proxy`.
    @Test(arguments: [407, 403])
    func aProxyThatRefusesPausesTheAppAndSpendsNoRow(status: Int) async throws {
        let tinyproxy = status == 407
            ? try await TinyProxy.start(credentials: ("alice", "the-right-one"))
            : try await TinyProxy.start(connectPorts: [443])
        let harness = try SimulatorHarness()
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 5)
        let run = try Self.run(harness, conninfo: conninfo, proxy: try HTTPProxy(url: tinyproxy.url), id: "refused-\(status)")
        var reason: String?
        _ = try await eventually(timeout: stateWaitLimit) {
            let row = try database.query("SELECT reason FROM pgpush.app_health WHERE app = 'default' AND NOT healthy")
            reason = row.rowCount == 1 ? row.string(0, 0) : nil
            return reason != nil
        }
        try await run.stop()
        let said = try #require(reason, "\(run.log.withLock { $0 })")
        #expect(said.hasPrefix("ProxyRefused: ") && said.contains(" \(status) "), "\(said)")
        #expect(try Self.count(database, "queued") == 5)
        #expect(try database.query("SELECT count(*) FROM pgpush.notifications WHERE attempts > 0").int(0, 0) == 0)
        let lines = run.log.withLock { $0 }
        #expect(lines.contains { $0.contains("apns_connection_failed") && $0.contains("cause=proxy") }, "\(lines)")
        #expect(harness.simulator.report().totalRequests == 0)
    }

    @Test func hostsNoProxyNamesAreReachedDirectly() async throws {
        let tinyproxy = try await TinyProxy.start()
        let harness = try SimulatorHarness()
        defer { harness.stop() }
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 10)
        let run = try Self.run(harness, conninfo: conninfo, proxy: try HTTPProxy(url: tinyproxy.url, noProxy: "localhost, .example.com,127.0.0.1"),
                               id: "direct")
        #expect(try await eventually(timeout: stateWaitLimit) { try Self.count(database, "delivered") == 10 })
        try await run.stop()
        #expect(tinyproxy.connects.isEmpty, "\(tinyproxy.connects)")
    }
}
