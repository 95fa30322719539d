import APNsClient
import APNsSimulator
import Foundation
import PGPushCore
import PGPushTestSupport
import PushCrypto
import Testing

/// `ChannelManagementClient` against the simulator over TLS + HTTP/2: Apple's paths and
/// answers with either kind of credentials, and retries like the sending API's.
@Suite struct ChannelManagementClientTests {
    static let bundleID = "com.example.app"

    static func fastRetries() -> RetryConfiguration {
        var retry = RetryConfiguration.default
        retry.serverErrorDelay = .milliseconds(5) ... .milliseconds(20)
        retry.tooManyRequestsBaseDelay = .milliseconds(10)
        retry.tooManyRequestsMaximumDelay = .milliseconds(40)
        return retry
    }

    /// A simulator and a client for it; `certificate`: TLS client certificate instead of a JWT.
    static func start(certificate: Bool, faults: FaultPlan = FaultPlan()) throws -> (SimulatorHarness, ChannelManagementClient) {
        let harness = try SimulatorHarness(bundleID: bundleID, faults: faults) { configuration in
            if certificate { configuration.authentication = .certificate(trustedCAFile: nil) }
        }
        let authentication: APNsAuthentication
        if certificate {
            let issued = try #require(harness.simulator.certificateAuthority).issueClientCertificate(commonName: bundleID)
            authentication = .certificate(try ClientIdentity.fromPEM(certificatePEM: issued.certificatePEM,
                                                                     privateKeyPEM: issued.privateKeyPEM))
        } else {
            authentication = .token(try harness.tokenCache())
        }
        let client = try ChannelManagementClient(endpoint: try APNsEndpoint(baseURL: harness.baseURL),
                                                 bundleID: bundleID, authentication: authentication,
                                                 extraCAFile: harness.caFile, retry: fastRetries())
        return (harness, client)
    }

    @Test(arguments: [false, true])
    func createReadListDelete(certificate: Bool) async throws {
        let (harness, client) = try Self.start(certificate: certificate)
        defer { client.close(); harness.stop() }
        let kept = try await client.create(storesMessages: true)
        let unstored = try await client.create(storesMessages: false)
        #expect(try await client.read(channelID: kept) == 1)
        #expect(try await client.read(channelID: unstored) == 0)
        #expect(Set(try await client.list()) == [kept, unstored])
        try await client.delete(channelID: unstored)
        #expect(try await client.list() == [kept])
        let gone = await #expect(throws: ChannelManagementError.self) { try await client.read(channelID: unstored) }
        #expect(gone?.reason == "ChannelNotRegistered" && gone?.status == 400)
        #expect(harness.simulator.report().managementRequests == 8)
    }

    /// 429 and 5xx are retried within the app's retry settings; a create only after a 429,
    /// since a create that may have happened must not make a second channel.
    @Test func retriesLikeTheSendingAPIButNeverRepeatsACreateThatMayHaveHappened() async throws {
        var faults = FaultPlan()
        faults.managementScript = [try ScriptedAnswer(parsing: "TooManyRequests"), try ScriptedAnswer(parsing: "503")]
        let (harness, client) = try Self.start(certificate: false, faults: faults)
        defer { client.close(); harness.stop() }
        let refused = await #expect(throws: ChannelManagementError.self) { try await client.create(storesMessages: true) }
        #expect(refused?.status == 503 && refused?.reason == "ServiceUnavailable")
        #expect(refused?.description.contains("after 2 attempts") == true)
        #expect(refused?.description.contains("may have been created") == true)
        #expect(try await client.list().isEmpty)

        var flaky = FaultPlan()
        flaky.managementScript = [try ScriptedAnswer(parsing: "503"), try ScriptedAnswer(parsing: "500")]
        let (other, retrying) = try Self.start(certificate: false, faults: flaky)
        defer { retrying.close(); other.stop() }
        #expect(try await retrying.list().isEmpty)
        #expect(other.simulator.report().managementRequests == 3)
    }
}
