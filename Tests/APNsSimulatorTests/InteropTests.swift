import APNsSimulator
import Foundation
import PGPushTestSupport
import Testing

/// Independent HTTP/2 implementations from Debian (nghttp2-client) against the simulator.
@Suite("Simulator interoperability with nghttp and h2load")
struct SimulatorInteropTests {
    /// APNs headers as command-line flags; with `-d` both tools send POST.
    func headers(jwt: String) -> [String] {
        ["-H", "authorization: bearer \(jwt)", "-H", "apns-topic: \(testBundleID)", "-H", "apns-push-type: alert"]
    }

    func bodyFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-interop-\(UUID()).json").path
        try Data(#"{"aps":{"alert":"interop"}}"#.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("nghttp gets an APNs answer: 200 with apns-id, and 400 with a JSON reason",
          .enabled(if: ChildProcess.tool("nghttp") != nil))
    func nghttpAgainstSimulator() async throws {
        let harness = try SimulatorHarness(key: signingKey())
        defer { harness.stop() }
        let body = try bodyFile()
        defer { try? FileManager.default.removeItem(atPath: body) }
        let url = "https://127.0.0.1:\(harness.port)/3/device/\(testDeviceToken)"
        let accepted = try ChildProcess(ChildProcess.tool("nghttp") ?? "", ["-v", "-d", body] + headers(jwt: try makeJWT()) + [url])
        #expect(await accepted.wait(timeout: .seconds(30)) == 0)
        #expect(accepted.output.contains(":status: 200"))
        #expect(accepted.output.contains("apns-id: "))
        let badToken = try ChildProcess(ChildProcess.tool("nghttp") ?? "", ["-v", "-d", body] + headers(jwt: try makeJWT())
                                          + ["https://127.0.0.1:\(harness.port)/3/device/xyz"])
        #expect(await badToken.wait(timeout: .seconds(30)) == 0)
        #expect(badToken.output.contains(":status: 400"))
        #expect(badToken.output.contains(#"{"reason":"BadDeviceToken"}"#))
    }

    @Test("h2load sends 2,000 valid pushes over 2 connections and all are accepted",
          .enabled(if: ChildProcess.tool("h2load") != nil))
    func h2loadAgainstSimulator() async throws {
        let harness = try SimulatorHarness(key: signingKey())
        defer { harness.stop() }
        let body = try bodyFile()
        defer { try? FileManager.default.removeItem(atPath: body) }
        // One stream at a time: like APNs, the simulator refuses a token connection's extra
        // streams until it has seen a valid JWT, and h2load does not wait for the raised limit.
        let load = try ChildProcess(ChildProcess.tool("h2load") ?? "", ["-n", "2000", "-c", "2", "-m", "1", "-d", body]
                                      + headers(jwt: try makeJWT())
                                      + ["https://127.0.0.1:\(harness.port)/3/device/\(testDeviceToken)"])
        #expect(await load.wait(timeout: .seconds(60)) == 0)
        #expect(load.output.contains("2000 succeeded"), "\(load.output)")
        #expect(load.output.contains("2000 2xx"))
        let report = harness.simulator.report()
        #expect(report.count(status: 200) == 2000)
        #expect(report.connections.count == 2)
    }
}
