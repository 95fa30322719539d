import APNsSimulator
import Foundation
import HTTP2TLS
import PGPushTestSupport
import Testing

/// `pgpush mock-apns` running with token authentication and some flags, in its own folder.
struct RunningMockAPNs {
    let child: ChildProcess
    let port: Int
    let caPath: String
    let reportPath: String
    let directory: URL

    static func arguments(in directory: URL, _ flags: [String]) throws -> [String] {
        let keyPath = directory.appendingPathComponent("key.p8").path
        try signingKey().writePKCS8(toFile: keyPath)
        return ["mock-apns", "--port", "0", "--team-id", testTeamID, "--key-id", testKeyID, "--p8", keyPath,
                "--bundle-id", testBundleID, "--ca-out", directory.appendingPathComponent("ca.pem").path,
                "--report", directory.appendingPathComponent("report.json").path] + flags
    }

    static func start(binary: String, _ flags: [String]) async throws -> RunningMockAPNs {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mock-apns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let child = try ChildProcess(binary, try arguments(in: directory, flags))
        let marker = "mock-apns listening on "
        guard await child.waitForOutput(containing: marker, timeout: .seconds(20)),
              let line = child.output.split(separator: "\n").first(where: { $0.contains(marker) }),
              let portText = line.split(separator: ":").dropFirst(2).first?.prefix(while: \.isNumber),
              let port = Int(portText)
        else {
            try? FileManager.default.removeItem(at: directory)
            throw TestSetupError("mock-apns did not start: \(child.output)")
        }
        return RunningMockAPNs(child: child, port: port, caPath: directory.appendingPathComponent("ca.pem").path,
                               reportPath: directory.appendingPathComponent("report.json").path, directory: directory)
    }

    /// The key, CA and report; the process itself is killed when `child` goes away.
    func removeFiles() { try? FileManager.default.removeItem(at: directory) }

    func connect(_ client: HTTP2Client) async throws -> HTTP2ClientConnection {
        try await client.connect(host: "127.0.0.1", port: port,
                                 configuration: HTTP2ClientConfiguration(tls: try ClientTLSContext(extraCAFile: caPath)))
    }

    /// SIGTERM, then the report the process wrote on its way out.
    func stop() async throws -> SimulatorReport {
        child.signal(SIGTERM)
        let code = await child.wait(timeout: .seconds(20))
        guard code == 0 else { throw TestSetupError("mock-apns exited with \(String(describing: code))") }
        return try JSONDecoder().decode(SimulatorReport.self, from: Data(contentsOf: URL(fileURLWithPath: reportPath)))
    }
}

@Suite("pgpush mock-apns: fault flags", .enabled(if: ChildProcess.pgpushBinary != nil, "build pgpush first (swift build)"))
struct MockAPNsFaultFlagsTests {
    let binary = ChildProcess.pgpushBinary ?? "pgpush"

    enum Flag: String, CaseIterable, Sendable {
        case goAwayBeforeFirstStream, topicAnswer, staleProviderTokens, expireEveryProviderToken
    }

    @Test(arguments: Flag.allCases)
    func flagReachesTheSimulator(_ flag: Flag) async throws {
        let flags: [String] = switch flag {
        case .goAwayBeforeFirstStream: ["--goaway-before-first-stream", "BadCertificateEnvironment"]
        case .topicAnswer: ["--topic-answer", "\(testBundleID).voip=TopicDisallowed", "--topic-answer=\(testBundleID)=503"]
        case .staleProviderTokens: ["--stale-provider-tokens-after", "1"]
        case .expireEveryProviderToken: ["--expire-every-provider-token"]
        }
        let simulator = try await RunningMockAPNs.start(binary: binary, flags)
        defer { simulator.removeFiles() }
        let client = try HTTP2Client(threadName: "mock-apns-flags-test")
        defer { client.shutdown() }
        let connection = try await simulator.connect(client)
        let jwt = try makeJWT()
        switch flag {
        case .goAwayBeforeFirstStream:
            do {
                _ = try await connection.send(pushRequest(jwt: jwt))
                Issue.record("the first request was answered")
            } catch {
                #expect(error.cause == .goAway(GoAway(lastStreamID: 0, errorCode: 0,
                                                      debugData: Array(#"{"reason":"BadCertificateEnvironment"}"#.utf8))))
            }
        case .topicAnswer:
            let voip = try await connection.send(pushRequest(pushType: "voip", topic: "\(testBundleID).voip", jwt: jwt))
            #expect(voip.status == 400 && voip.reason == "TopicDisallowed")
            #expect(try await connection.send(pushRequest(jwt: jwt)).status == 503)
        case .staleProviderTokens:
            #expect(try await connection.send(pushRequest(jwt: jwt)).status == 200)
            #expect(try await simulator.connect(client).send(pushRequest(jwt: jwt)).reason == "ExpiredProviderToken")
        case .expireEveryProviderToken:
            #expect(try await connection.send(pushRequest(jwt: jwt)).reason == "ExpiredProviderToken")
        }
        let report = try await simulator.stop()
        switch flag {
        case .goAwayBeforeFirstStream: #expect(report.goAwayReasons == ["BadCertificateEnvironment": 1] && report.connectionsOpened == 1)
        case .topicAnswer: #expect(report.reasonCounts == ["TopicDisallowed": 1, "ServiceUnavailable": 1])
        case .staleProviderTokens: #expect(report.count(reason: "ExpiredProviderToken") == 1 && report.connectionsOpened == 2)
        case .expireEveryProviderToken: #expect(report.count(reason: "ExpiredProviderToken") == 1)
        }
    }

    @Test(arguments: [
        (["--stale-provider-tokens-after", "0"], "--stale-provider-tokens-after must be an integer"),
        (["--topic-answer", "com.example.app.voip"], "--topic-answer looks like"),
        (["--topic-answer", "com.example.app.voip=Maybe"], "\"Maybe\" is not an answer"),
        (["--goaway-before-first-stream", " "], "goAwayBeforeFirstStream needs a reason"),
    ])
    func badValuesAreUsageErrors(_ flags: [String], _ message: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mock-apns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let child = try ChildProcess(binary, try RunningMockAPNs.arguments(in: directory, flags))
        #expect(await child.wait(timeout: .seconds(20)) == 2)
        #expect(child.output.contains(message), "\(child.output)")
    }
}
