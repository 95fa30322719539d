import APNsSimulator
import Foundation
import PGPushCore
import PGPushTestSupport
import PushCrypto
import Testing

@Suite("Simulator over TLS: certificate authentication")
struct CertificateAuthenticationTests {
    @Test func clientCertificateNamesTheTopic() async throws {
        let harness = try SimulatorHarness(key: signingKey()) { $0.authentication = .certificate(trustedCAFile: nil) }
        defer { harness.stop() }
        let authority = try #require(harness.simulator.certificateAuthority)
        let issued = try authority.issueClientCertificate(commonName: testBundleID)
        let identity = try ClientIdentity.fromPEM(certificatePEM: issued.certificatePEM, privateKeyPEM: issued.privateKeyPEM)
        let connection = try await harness.connect(identity: identity)
        // No topic header: the certificate's topic is used; the voip topic is covered too.
        #expect(try await connection.send(pushRequest(topic: nil, jwt: nil)).status == 200)
        #expect(try await connection.send(pushRequest(pushType: "voip", topic: testBundleID + ".voip", jwt: nil)).status == 200)
        let other = try await connection.send(pushRequest(topic: "com.other.app", jwt: nil))
        #expect(other.status == 400 && other.reason == "DeviceTokenNotForTopic")
        let tokenOnly = try await connection.send(pushRequest(pushType: "location", topic: testBundleID + ".location-query", jwt: nil))
        #expect(tokenOnly.status == 400 && tokenOnly.reason == "TopicDisallowed")
    }

    @Test func noClientCertificateMeansMissingProviderToken() async throws {
        let harness = try SimulatorHarness(key: signingKey()) { $0.authentication = .certificate(trustedCAFile: nil) }
        defer { harness.stop() }
        let connection = try await harness.connect()
        let response = try await connection.send(pushRequest(jwt: nil))
        #expect(response.status == 403 && response.reason == "MissingProviderToken")
    }
}
