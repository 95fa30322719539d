import APNsClient
import APNsSimulator
import Foundation
import PushCrypto
import PushWorker

/// The APNs simulator as the fault suite drives it: its own CA and server
/// certificate on disk (so a worker can trust it before it is up), a fresh p8
/// key, a fixed port (so it can start after the worker), and a request log
/// from which the suite reads every accepted `apns-id`.
final class SimulatorHarness: Sendable {
    static let bundleID = "com.example.reliability"
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"

    let directory: URL
    let port: Int
    let keyFile: String
    let caFile: String
    let logFile: String
    let simulator: APNsSimulator

    var baseURL: String { "https://127.0.0.1:\(port)" }

    /// Prepares everything; the simulator listens only after `start()`.
    init(faults: FaultPlan) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-reliability-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = try ES256PrivateKey.generate()
        keyFile = directory.appendingPathComponent("AuthKey.p8").path
        try key.writePKCS8(toFile: keyFile)

        let authority = try SelfSignedAuthority.generate(commonName: "pgpush reliability CA")
        let server = try authority.issueServerCertificate(ipAddresses: ["127.0.0.1"])
        caFile = directory.appendingPathComponent("ca.pem").path
        let chainFile = directory.appendingPathComponent("server.pem").path
        let serverKeyFile = directory.appendingPathComponent("server-key.pem").path
        try Data(authority.certificatePEM.utf8).write(to: URL(fileURLWithPath: caFile))
        try Data(server.certificatePEM.utf8).write(to: URL(fileURLWithPath: chainFile))
        try Data(server.privateKeyPEM.utf8).write(to: URL(fileURLWithPath: serverKeyFile))
        logFile = directory.appendingPathComponent("requests.jsonl").path
        port = try FreePort.reserve()

        var configuration = SimulatorConfiguration(authentication: .token(
            ProviderTokenKey(teamID: Self.teamID, keyID: Self.keyID, publicKey: try key.publicKey())))
        configuration.port = port
        configuration.bundleID = Self.bundleID
        configuration.serverCertificate = .files(certificateChain: chainFile, privateKey: serverKeyFile)
        configuration.faults = faults
        configuration.logPath = logFile
        simulator = try APNsSimulator(configuration: configuration)
    }

    func start() throws { try simulator.start() }

    func stop() {
        simulator.stop()
    }

    func removeFiles() {
        simulator.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func app(connections: Int, ratePerConnection: Int) -> AppConfiguration {
        AppConfiguration(
            name: "default", bundleID: Self.bundleID, apnsURL: baseURL, caFile: caFile,
            authentication: .token(teamID: Self.teamID, keyID: Self.keyID, keyFile: keyFile),
            connections: connections, ratePerConnection: ratePerConnection)
    }

    /// A sender with a request timeout of its own (the factory keeps the default 10 s).
    func sender(connections: Int, ratePerConnection: Int, requestTimeout: Duration) throws -> any NotificationSender {
        let signer = try ProviderTokenSigner(keyFile: keyFile, keyID: Self.keyID, teamID: Self.teamID)
        var configuration = APNsClientConfiguration(
            appName: "default", bundleID: Self.bundleID, endpoint: try APNsEndpoint(baseURL: baseURL),
            authentication: .token(ProviderTokenCache(signer: signer)))
        configuration.extraCAFile = caFile
        configuration.connections = connections
        configuration.ratePerConnection = ratePerConnection
        configuration.requestTimeout = requestTimeout
        return try APNsClient(configuration: configuration)
    }

    /// The environment `pgpush run` reads to serve this simulator.
    func workerEnvironment(connections: Int, ratePerConnection: Int) -> [String: String] {
        [
            "PGPUSH_TOPIC": Self.bundleID, "PGPUSH_APNS_URL": baseURL, "PGPUSH_CA_FILE": caFile,
            "PGPUSH_TEAM_ID": Self.teamID, "PGPUSH_KEY_ID": Self.keyID, "PGPUSH_KEY_FILE": keyFile,
            "PGPUSH_CONNECTIONS": String(connections), "PGPUSH_RATE_PER_CONNECTION": String(ratePerConnection),
        ]
    }

    /// How many times each `apns-id` was answered 200, from the request log
    /// (the report only counts duplicates; the invariants need the ids).
    func acceptedAPNsIDs() throws -> [UUID: Int] {
        _ = simulator.report()   // flushes the log
        let text = try String(contentsOfFile: logFile, encoding: .utf8)
        let decoder = JSONDecoder()
        var accepted: [UUID: Int] = [:]
        for line in text.split(separator: "\n") where !line.isEmpty {
            let entry = try decoder.decode(RequestLogEntry.self, from: Data(line.utf8))
            guard entry.outcome == "answered", entry.status == 200,
                  let text = entry.headers["apns-id"], let id = UUID(uuidString: text) else { continue }
            accepted[id, default: 0] += 1
        }
        return accepted
    }
}

/// A TCP port nobody listens on right now, for a server that starts later.
enum FreePort {
    static func reserve() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HarnessError("socket() failed: errno \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else { throw HarnessError("bind() failed: errno \(errno)") }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { throw HarnessError("getsockname() failed: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
