import APNsSimulator
import Foundation
import Glibc
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Locking
import PGPushTestSupport
import Postgres
import PushCrypto
@testable import PushWorker
import Testing

/// A worker that cannot connect to APNs says why, once per app and cause and interval,
/// and counts each failure in /metrics by cause; its rows stay queued meanwhile.
@Suite(.timeLimit(.minutes(10)))
struct ConnectionFailureTests {
    /// The lines of one event for one app in what a worker logged.
    static func lines(_ log: Locked<[String]>, _ event: String, app: String) -> [String] {
        log.withLock { lines in
            lines.filter { line in
                let words = line.split(whereSeparator: { $0 == " " || $0 == "\n" })
                return words.count > 2 && words[2] == event && words.contains("app=\(app)")
            }
        }
    }

    /// Polls /metrics until `condition` holds for a scrape or `timeout` passes; the last scrape.
    static func scrape(_ port: Int, timeout: Duration = .seconds(240),
                       until condition: (String) -> Bool) async throws -> (held: Bool, scrape: String) {
        let deadline = ContinuousClock.now + timeout
        var last = ""
        while ContinuousClock.now < deadline {
            last = (try? await metrics(port)) ?? last
            if condition(last) { return (true, last) }
            try await Task.sleep(for: .milliseconds(200))
        }
        return (false, last)
    }

    static func metrics(_ port: Int) async throws -> String {
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/metrics"))
        let (data, _) = try await URLSession.shared.data(from: url)
        return String(decoding: data, as: UTF8.self)
    }

    /// The value of the series `name{labels}` in a scrape, nil when it is absent.
    static func value(_ scrape: String, _ series: String) -> Int? {
        for line in scrape.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Int(line.dropFirst(series.count + 1))
        }
        return nil
    }

    /// A token-auth app of this worker, reaching `url` and trusting `caFile`.
    static func app(_ name: String, url: String, caFile: String?, harness: SimulatorHarness, connections: Int = 2) -> AppConfiguration {
        AppConfiguration(name: name, bundleID: harness.bundleID, apnsURL: url, caFile: caFile,
                         authentication: .token(teamID: harness.teamID, keyID: harness.keyID, keyFile: harness.keyFile),
                         connections: connections, ratePerConnection: 0)
    }

    static func enqueue(_ database: PostgresConnection, app: String, count: Int) throws {
        try database.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => '{\"aps\":{\"alert\":\"x\"}}', app => $2)",
                           [(1...count).map { String(format: "%064x", $0) }, app])
    }

    /// Rows of `app` that ended (delivered, failed, expired): none may while APNs is unreachable.
    static func finishedRows(_ database: PostgresConnection, app: String) throws -> Int {
        try database.query("SELECT count(*) FROM pgpush.notifications WHERE app = $1 AND status NOT IN ('queued', 'sending')",
                           [app]).int(0, 0) ?? -1
    }

    /// status and last_reason of each row of `app`, for a failure's message.
    static func statuses(_ database: PostgresConnection, app: String) throws -> [String] {
        let result = try database.query("SELECT status || ' ' || coalesce(last_reason, '') FROM pgpush.notifications WHERE app = $1",
                                        [app])
        return (0..<result.rowCount).map { result.string($0, 0) ?? "?" }
    }

    static func queuedOrSending(_ database: PostgresConnection, app: String) throws -> Int {
        try database.query("SELECT count(*) FROM pgpush.notifications WHERE app = $1 AND status IN ('queued', 'sending')",
                           [app]).int(0, 0) ?? -1
    }

    /// `openssl s_server` on 127.0.0.1:`port` with the certificate; what is written to its
    /// stdin goes to the first client after the handshake.
    /// A CA file and a certificate for 127.0.0.1 it issued, with its key, written beside the harness's files.
    static func trustedCertificate(in directory: URL, name: String) throws -> (caFile: String, chainFile: String, keyFile: String) {
        let files = try ServerCertificateFiles(in: directory, name: name)
        return (files.caFile, files.chainFile, files.keyFile)
    }

    @Test func anExpiredServerCertificateIsLoggedOnceWithItsExpiryAndCounted() async throws {
        let harness = try SimulatorHarness()
        defer { harness.stop() }
        // An APNs look-alike whose certificate, from a CA the worker trusts, expired yesterday.
        let expired = try ServerCertificateFiles.expired(in: harness.directory)
        let (caFile, chainFile, keyFile) = (expired.caFile, expired.chainFile, expired.keyFile)
        let notAfter = expired.validity.notAfter
        var configuration = SimulatorConfiguration(authentication: .token(
            ProviderTokenKey(teamID: harness.teamID, keyID: harness.keyID, publicKey: try harness.key.publicKey())))
        configuration.serverCertificate = .files(certificateChain: chainFile, privateKey: keyFile)
        let server = try APNsSimulator(configuration: configuration)
        let port = try server.start()
        defer { server.stop() }

        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try Self.enqueue(database, app: "expired", count: 3)
        let log = Locked<[String]>([])
        let app = Self.app("expired", url: "https://127.0.0.1:\(port)", caFile: caFile, harness: harness)
        var workerConfiguration = WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: "expired-worker")
        workerConfiguration.metricsAddress = "127.0.0.1:0"
        workerConfiguration.drainTimeout = .seconds(2)
        let worker = try Worker(configuration: workerConfiguration, senders: try SenderFactory.makeSenders(for: [app]),
                                log: Log(sink: { line in log.withLock { $0.append(line) } }))
        let metricsPort = try #require(worker.metricsPort)
        let running = Task { try await worker.run() }
        defer { worker.stop() }

        let series = #"pgpush_apns_connection_failures_total{app="expired",service="apns",cause="tls_certificate"}"#
        // Both connections fail, and keep failing with backoff: several failures, one line.
        let (held, scrape) = try await Self.scrape(metricsPort) { (Self.value($0, series) ?? 0) >= 3 }
        #expect(held, "\(scrape)")
        let failures = Self.lines(log, "apns_connection_failed", app: "expired")
        #expect(failures.count == 1, "\(log.withLock { $0 })")
        let line = failures.first ?? ""
        #expect(line.contains(" warning apns_connection_failed "), "\(line)")
        #expect(line.contains(" cause=tls_certificate "), "\(line)")
        #expect(line.contains(" endpoint=127.0.0.1:\(port) "), "\(line)")
        #expect(line.contains(#"reason="certificate has expired""#), "\(line)")
        #expect(line.contains(#"certificate_subject="CN=expired.test""#), "\(line)")
        #expect(line.contains("certificate_not_after=\(notAfter.formatted(.iso8601))"), "\(line)")
        // Every cause has its series from the start, at zero until it happens.
        #expect(Self.value(scrape, #"pgpush_apns_connection_failures_total{app="expired",service="apns",cause="dns"}"#) == 0, "\(scrape)")
        #expect(scrape.contains("# TYPE pgpush_apns_connection_failures_total counter"), "\(scrape)")
        // Nothing was sent, nothing ended: the rows wait for a connection.
        let rows = try Self.statuses(database, app: "expired")
        #expect(try Self.finishedRows(database, app: "expired") == 0, "\(rows)")
        #expect(try Self.queuedOrSending(database, app: "expired") == 3)
        #expect(server.report().totalRequests == 0)
        worker.stop()
        try await running.value
    }

    @Test(.enabled(if: ChildProcess.tool("openssl") != nil))
    func anUnknownHostAndARefusedALPNHaveCausesOfTheirOwn() async throws {
        let harness = try SimulatorHarness()
        defer { harness.stop() }
        // A TLS server with a certificate the worker trusts that speaks only HTTP/1.1.
        let (caFile, chainFile, keyFile) = try Self.trustedCertificate(in: harness.directory, name: "alpn")
        // Listening before the worker starts: a refused connect would be a cause of its own.
        let http1 = try await OpenSSLServer.start(certificateChain: chainFile, privateKey: keyFile, ["-alpn", "http/1.1"])
        defer { http1.stop() }
        let alpnPort = http1.port
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try Self.enqueue(database, app: "nohost", count: 2)
        try Self.enqueue(database, app: "noalpn", count: 2)
        let log = Locked<[String]>([])
        let apps = [Self.app("nohost", url: "https://nonexistent.invalid:443", caFile: caFile, harness: harness),
                    Self.app("noalpn", url: "https://127.0.0.1:\(alpnPort)", caFile: caFile, harness: harness)]
        var workerConfiguration = WorkerConfiguration(databaseURL: conninfo, apps: apps, workerID: "causes-worker")
        workerConfiguration.metricsAddress = "127.0.0.1:0"
        workerConfiguration.drainTimeout = .seconds(2)
        let worker = try Worker(configuration: workerConfiguration, senders: try SenderFactory.makeSenders(for: apps),
                                log: Log(sink: { line in log.withLock { $0.append(line) } }))
        let metricsPort = try #require(worker.metricsPort)
        let running = Task { try await worker.run() }
        defer { worker.stop() }

        let dns = #"pgpush_apns_connection_failures_total{app="nohost",service="apns",cause="dns"}"#
        let alpn = #"pgpush_apns_connection_failures_total{app="noalpn",service="apns",cause="alpn"}"#
        let (held, scrape) = try await Self.scrape(metricsPort) { (Self.value($0, dns) ?? 0) >= 2 && (Self.value($0, alpn) ?? 0) >= 2 }
        #expect(held, "\(scrape)")
        let noHost = Self.lines(log, "apns_connection_failed", app: "nohost")
        #expect(noHost.count == 1, "\(log.withLock { $0 })")
        #expect(noHost.first?.contains(" cause=dns ") == true, "\(noHost)")
        #expect(noHost.first?.contains(" endpoint=nonexistent.invalid:443 ") == true, "\(noHost)")
        let noALPN = Self.lines(log, "apns_connection_failed", app: "noalpn")
        #expect(noALPN.count == 1, "\(log.withLock { $0 })")
        #expect(noALPN.first?.contains(" cause=alpn ") == true, "\(noALPN)")
        #expect(noALPN.first?.contains(" endpoint=127.0.0.1:\(alpnPort) ") == true, "\(noALPN)")
        #expect(noALPN.first?.contains(" alpn_selected=none") == true, "\(noALPN)")
        // No cross-talk: each app counts only its own cause.
        #expect(Self.value(scrape, #"pgpush_apns_connection_failures_total{app="nohost",service="apns",cause="alpn"}"#) == 0, "\(scrape)")
        #expect(Self.value(scrape, #"pgpush_apns_connection_failures_total{app="noalpn",service="apns",cause="dns"}"#) == 0, "\(scrape)")
        for app in ["nohost", "noalpn"] {
            let rows = try Self.statuses(database, app: app)
            #expect(try Self.finishedRows(database, app: app) == 0, "\(rows)")
            #expect(try Self.queuedOrSending(database, app: app) == 2, "\(rows)")
        }
        worker.stop()
        try await running.value
    }

    @Test(.enabled(if: ChildProcess.tool("openssl") != nil))
    func aConnectionEndedByAProtocolErrorIsLoggedAndCounted() async throws {
        let harness = try SimulatorHarness()
        defer { harness.stop() }
        // Agrees to h2, then sends what is no HTTP/2 frame: the client ends the connection.
        let (caFile, chainFile, keyFile) = try Self.trustedCertificate(in: harness.directory, name: "garbage")
        let server = try await OpenSSLServer.start(certificateChain: chainFile, privateKey: keyFile, ["-alpn", "h2"])
        defer { server.stop() }
        let port = server.port
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try Self.enqueue(database, app: "garbage", count: 1)
        let log = Locked<[String]>([])
        // One connection: s_server serves one at a time, a second would time out in its backlog.
        let app = Self.app("garbage", url: "https://127.0.0.1:\(port)", caFile: caFile, harness: harness, connections: 1)
        var workerConfiguration = WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: "garbage-worker")
        workerConfiguration.metricsAddress = "127.0.0.1:0"
        workerConfiguration.drainTimeout = .seconds(2)
        let worker = try Worker(configuration: workerConfiguration, senders: try SenderFactory.makeSenders(for: [app]),
                                log: Log(sink: { line in log.withLock { $0.append(line) } }))
        let metricsPort = try #require(worker.metricsPort)
        let running = Task { try await worker.run() }
        defer { worker.stop() }

        // s_server passes its stdin on only while a client is connected (and drops it
        // otherwise): keep offering the garbage until a connection has taken it.
        let writer = server.input
        let garbage = Task {
            while !Task.isCancelled {
                try? writer.write(contentsOf: Data("this is not HTTP/2 at all\n".utf8))
                try? await Task.sleep(for: .milliseconds(300))
            }
        }
        defer { garbage.cancel() }
        let series = #"pgpush_apns_connection_failures_total{app="garbage",service="apns",cause="protocol_error"}"#
        let (held, scrape) = try await Self.scrape(metricsPort) { (Self.value($0, series) ?? 0) >= 1 }
        garbage.cancel()
        #expect(held, "\(scrape)\n\(log.withLock { $0 })")
        let lines = Self.lines(log, "apns_connection_failed", app: "garbage").filter { $0.contains(" cause=protocol_error ") }
        #expect(lines.count == 1, "\(log.withLock { $0 })")
        #expect(lines.first?.contains(" endpoint=127.0.0.1:\(port) ") == true, "\(lines)")
        #expect(lines.first?.contains("PROTOCOL_ERROR") == true, "\(lines)")
        worker.stop()
        try await running.value
    }
}
