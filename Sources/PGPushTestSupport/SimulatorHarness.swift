import APNsClient
import APNsSimulator
import Foundation
import HTTP2TLS
import Locking
import PushCrypto
import PushWorker
import PushTransport

/// The APNs simulator over real TLS as the delivery tests use it: a p8 key written to a
/// folder of its own, the simulator's CA on disk for clients to trust, and the ways in
/// that the tests need (an HTTP/2 connection, an `APNsClient`, an app configuration for
/// a worker in this process, the environment for `pgpush run` in another).
///
/// By default the simulator starts at once on a port of its choosing, with a CA it
/// generates. `startsLater` instead writes a CA and server certificate first and fixes
/// the port, so that a worker can be configured, and even started, before the simulator
/// listens (`start()`).
package final class SimulatorHarness: Sendable {
    package let bundleID: String
    package let teamID: String
    package let keyID: String
    /// The key the simulator verifies provider tokens with.
    package let key: ES256PrivateKey
    /// Holds the key file, the request log and whatever else a test writes beside them.
    package let directory: URL
    package let keyFile: String
    package let caFile: String
    package let port: Int
    /// Where the simulator writes its request log, when it keeps one.
    package let logFile: String?
    package let simulator: APNsSimulator
    /// The `app` a worker gets unless a test asks for other numbers.
    package let connections: Int
    package let ratePerConnection: Int
    private let client = Locked<HTTP2Client?>(nil)

    package var baseURL: String { "https://127.0.0.1:\(port)" }

    /// `key` nil: a fresh one. `configure` adjusts the simulator's configuration last
    /// (environment, channels, certificate authentication, …).
    package init(bundleID: String = "com.example.app", teamID: String = "TEAM123456", keyID: String = "KEY1234567",
                key: ES256PrivateKey? = nil, faults: FaultPlan = FaultPlan(), ratePerConnection: Int = 0,
                connections: Int = 2, logRequests: Bool = false, startsLater: Bool = false,
                configure: (inout SimulatorConfiguration) throws -> Void = { _ in }) throws {
        self.bundleID = bundleID
        self.teamID = teamID
        self.keyID = keyID
        self.connections = connections
        self.ratePerConnection = ratePerConnection
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-simulator-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = try key ?? ES256PrivateKey.generate()
        self.key = key
        keyFile = directory.appendingPathComponent("AuthKey.p8").path
        try key.writePKCS8(toFile: keyFile)
        logFile = logRequests ? directory.appendingPathComponent("requests.jsonl").path : nil

        var configuration = SimulatorConfiguration(authentication: .token(
            ProviderTokenKey(teamID: teamID, keyID: keyID, publicKey: try key.publicKey())))
        configuration.bundleID = bundleID
        configuration.faults = faults
        configuration.logPath = logFile
        var caFile: String?
        if startsLater {
            let authority = try SelfSignedAuthority.generate(commonName: "pgpush simulator test CA")
            let server = try authority.issueServerCertificate(ipAddresses: ["127.0.0.1"])
            let chainFile = directory.appendingPathComponent("server.pem").path
            let serverKeyFile = directory.appendingPathComponent("server-key.pem").path
            caFile = directory.appendingPathComponent("ca.pem").path
            try Data(authority.certificatePEM.utf8).write(to: URL(fileURLWithPath: caFile ?? ""))
            try Data(server.certificatePEM.utf8).write(to: URL(fileURLWithPath: chainFile))
            try Data(server.privateKeyPEM.utf8).write(to: URL(fileURLWithPath: serverKeyFile))
            configuration.port = try freePort()
            configuration.serverCertificate = .files(certificateChain: chainFile, privateKey: serverKeyFile)
        }
        try configure(&configuration)
        simulator = try APNsSimulator(configuration: configuration)
        if startsLater {
            port = configuration.port
        } else {
            port = try simulator.start()
            caFile = simulator.caCertificatePath
        }
        guard let caFile else { throw TestSetupError("the simulator generated no CA") }
        self.caFile = caFile
    }

    /// Starts a simulator made with `startsLater` (again, after `simulator.stop()`).
    package func start() throws { _ = try simulator.start() }

    /// Stops the simulator and any connections from `connect`, and removes the folder.
    package func stop() {
        client.withLock { client in
            client?.shutdown()
            client = nil
        }
        simulator.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A bare HTTP/2 connection trusting the simulator's CA, on a client thread the harness owns.
    package func connect(identity: ClientIdentity? = nil) async throws -> HTTP2ClientConnection {
        let client = try self.client.withLock { client throws -> HTTP2Client in
            if let client { return client }
            let made = try HTTP2Client(threadName: "sim-test-client")
            client = made
            return made
        }
        let tls = try ClientTLSContext(extraCAFile: caFile, identity: identity)
        return try await client.connect(host: "127.0.0.1", port: port, configuration: HTTP2ClientConfiguration(tls: tls))
    }

    /// Provider tokens signed with the simulator's key.
    package func tokenCache() throws -> ProviderTokenCache {
        ProviderTokenCache(signer: ProviderTokenSigner(key: key, identity: try ProviderTokenIdentity(keyID: keyID, teamID: teamID)))
    }

    /// An `APNsClient` for the simulator, with a request timeout of its own (the worker's
    /// sender factory keeps the default 10 s).
    package func sender(connections: Int, ratePerConnection: Int, requestTimeout: Duration) throws -> any NotificationSender {
        var configuration = APNsClientConfiguration(
            appName: "default", bundleID: bundleID, endpoint: try APNsEndpoint(baseURL: baseURL),
            authentication: .token(try tokenCache()))
        configuration.extraCAFile = caFile
        configuration.connection.connections = connections
        configuration.connection.ratePerConnection = ratePerConnection
        configuration.connection.requestTimeout = requestTimeout
        return APNsSender(client: try APNsClient(configuration: configuration))
    }

    /// The app a worker in this process serves to reach the simulator.
    package var app: AppConfiguration { app(connections: connections, ratePerConnection: ratePerConnection) }

    package func app(connections: Int, ratePerConnection: Int) -> AppConfiguration {
        AppConfiguration(
            name: "default", bundleID: bundleID, apnsURL: baseURL, caFile: caFile,
            authentication: .token(teamID: teamID, keyID: keyID, keyFile: keyFile),
            connections: connections, ratePerConnection: ratePerConnection)
    }

    /// The environment `pgpush run` reads to serve this simulator; the worker's own
    /// connection and rate defaults where they are nil.
    package func workerEnvironment(connections: Int? = nil, ratePerConnection: Int? = nil) -> [String: String] {
        var environment = [
            "PGPUSH_TOPIC": bundleID, "PGPUSH_APNS_URL": baseURL, "PGPUSH_CA_FILE": caFile,
            "PGPUSH_TEAM_ID": teamID, "PGPUSH_KEY_ID": keyID, "PGPUSH_KEY_FILE": keyFile,
        ]
        if let connections { environment["PGPUSH_CONNECTIONS"] = String(connections) }
        if let ratePerConnection { environment["PGPUSH_RATE_PER_CONNECTION"] = String(ratePerConnection) }
        return environment
    }

    /// The request log as it stands (`logRequests`); the simulator writes it out when it
    /// stops or reports.
    package func requestLog() throws -> [RequestLogEntry] {
        guard let logFile else { throw TestSetupError("the simulator keeps no request log (logRequests: false)") }
        let text = try String(contentsOfFile: logFile, encoding: .utf8)
        let decoder = JSONDecoder()
        return try text.split(separator: "\n").map { try decoder.decode(RequestLogEntry.self, from: Data($0.utf8)) }
    }

    /// Stops the simulator (which flushes its request log) and reads the log.
    package func stopAndReadLog() throws -> [RequestLogEntry] {
        simulator.stop()
        return try requestLog()
    }

    /// How many times each `apns-id` was answered 200, from the request log
    /// (the report only counts duplicates; the invariants need the ids).
    package func acceptedAPNsIDs() throws -> [UUID: Int] {
        _ = simulator.report()   // flushes the log
        var accepted: [UUID: Int] = [:]
        for entry in try requestLog() {
            guard entry.outcome == "answered", entry.status == 200,
                  let text = entry.headers["apns-id"], let id = UUID(uuidString: text) else { continue }
            accepted[id, default: 0] += 1
        }
        return accepted
    }
}
