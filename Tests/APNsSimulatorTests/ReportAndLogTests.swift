import APNsSimulator
import Foundation
import HTTP2TLS
import PGPushCore
import PGPushTestSupport
import Testing

@Suite("Simulator over TLS: report and request log")
struct ReportAndLogTests {
    @Test func reportCountsRequestsConnectionsAndDuplicates() async throws {
        let harness = try SimulatorHarness(key: signingKey())
        defer { harness.stop() }
        let jwt = try makeJWT()
        let busy = try await harness.connect()
        let quiet = try await harness.connect()
        let repeated = UUID().uuidString.lowercased()
        for index in 0..<20 {
            _ = try await busy.send(pushRequest(apnsID: index < 2 ? repeated : UUID().uuidString.lowercased(), jwt: jwt))
        }
        for _ in 0..<5 { _ = try await quiet.send(pushRequest(jwt: jwt)) }
        _ = try await quiet.send(pushRequest(topic: nil, jwt: jwt))

        let report = harness.simulator.report()
        #expect(report.totalRequests == 26)
        #expect(report.count(status: 200) == 25)
        #expect(report.count(status: 400) == 1 && report.count(reason: "MissingTopic") == 1)
        #expect(report.duplicateAPNsIDs == 1)
        #expect(report.duplicateAcceptedAPNsIDs == 1)
        #expect(report.connections.map(\.requests).sorted() == [6, 20])
        // Twenty sequential loopback requests usually fit in one second; on a loaded machine
        // they may not, so only the bound and the agreement with the per-connection figure are asserted
        // (the window itself is pinned down by the OneSecondWindow unit tests).
        #expect((1...20).contains(report.maxRequestsPerConnectionPerSecond))
        #expect(report.maxRequestsPerConnectionPerSecond == report.connections.map(\.maxRequestsInOneSecond).max())
        #expect(report.connections.allSatisfy { $0.authenticated })

        let decoded = try JSONDecoder().decode(SimulatorReport.self, from: report.jsonData())
        #expect(decoded == report)
    }

    @Test func logHasEveryRequestButNoProviderToken() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sim-log-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let logPath = directory.appendingPathComponent("requests.jsonl").path
        let harness = try SimulatorHarness(key: signingKey()) { $0.logPath = logPath }
        let connection = try await harness.connect()
        let jwt = try makeJWT()
        let id = UUID().uuidString.lowercased()
        _ = try await connection.send(pushRequest(apnsID: id, jwt: jwt))
        _ = try await connection.send(pushRequest(jwt: jwt, body: []))
        harness.stop()

        let text = try String(contentsOfFile: logPath, encoding: .utf8)
        let lines = text.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(!text.contains(jwt))
        #expect(!text.contains(String(jwt.split(separator: ".")[2])))
        #expect(!text.lowercased().contains("authorization"))
        let entries = try lines.map { try JSONDecoder().decode(RequestLogEntry.self, from: Data($0.utf8)) }
        #expect(entries[0].headers["apns-id"] == id)
        #expect(entries[0].token == testDeviceToken && entries[0].status == 200 && entries[0].providerToken)
        #expect(entries[1].status == 400 && entries[1].reason == "PayloadEmpty" && entries[1].bodyBytes == 0)
    }
}
