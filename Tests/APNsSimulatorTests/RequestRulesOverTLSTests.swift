import APNsSimulator
import Foundation
import HTTP2TLS
import PGPushCore
import PGPushTestSupport
import Testing

@Suite("Simulator over TLS: header, path and payload rules")
struct RequestRulesOverTLSTests {
    struct Case: Sendable, CustomStringConvertible {
        let description: String
        let request: @Sendable (String) -> HTTP2Request
        let status: Int
        let reason: String
    }

    static let cases: [Case] = [
        Case(description: "GET", request: { pushRequest(jwt: $0, body: [], method: "GET") }, status: 405, reason: "MethodNotAllowed"),
        Case(description: "other path", request: { pushRequest(jwt: $0, path: "/3/other/\(testDeviceToken)") },
             status: 404, reason: "BadPath"),
        Case(description: "no token", request: { pushRequest(jwt: $0, path: "/3/device/") }, status: 400, reason: "MissingDeviceToken"),
        Case(description: "push type", request: { pushRequest(pushType: "banner", jwt: $0) }, status: 400, reason: "InvalidPushType"),
        Case(description: "apns-id", request: { pushRequest(apnsID: "not-a-uuid", jwt: $0) }, status: 400, reason: "BadMessageId"),
        Case(description: "expiration", request: {
            pushRequest(jwt: $0, extraHeaders: [HeaderField("apns-expiration", "soon")])
        }, status: 400, reason: "BadExpirationDate"),
        Case(description: "priority 7", request: { pushRequest(priority: "7", jwt: $0) }, status: 400, reason: "BadPriority"),
        Case(description: "background at 10", request: {
            pushRequest(pushType: "background", priority: "10", jwt: $0, body: Array(#"{"aps":{"content-available":1}}"#.utf8))
        }, status: 400, reason: "BadPriority"),
        Case(description: "no topic", request: { pushRequest(topic: nil, jwt: $0) }, status: 400, reason: "MissingTopic"),
        Case(description: "other app's topic", request: { pushRequest(topic: "com.other.app", jwt: $0) },
             status: 400, reason: "DeviceTokenNotForTopic"),
        Case(description: "voip without suffix", request: { pushRequest(pushType: "voip", topic: testBundleID, jwt: $0) },
             status: 400, reason: "BadTopic"),
        Case(description: "collapse id", request: {
            pushRequest(jwt: $0, extraHeaders: [HeaderField("apns-collapse-id", String(repeating: "c", count: 65))])
        }, status: 400, reason: "BadCollapseId"),
        Case(description: "duplicate header", request: {
            pushRequest(jwt: $0, extraHeaders: [HeaderField("apns-topic", testBundleID)])
        }, status: 400, reason: "DuplicateHeaders"),
        Case(description: "non-hex token", request: { pushRequest(token: "zz" + testDeviceToken, jwt: $0) },
             status: 400, reason: "BadDeviceToken"),
        Case(description: "odd-length token", request: { pushRequest(token: "a" + testDeviceToken, jwt: $0) },
             status: 400, reason: "BadDeviceToken"),
        Case(description: "empty payload", request: { pushRequest(jwt: $0, body: []) }, status: 400, reason: "PayloadEmpty"),
        Case(description: "alert over 4096", request: { pushRequest(jwt: $0, body: payload(ofSize: 4097)) },
             status: 413, reason: "PayloadTooLarge"),
        Case(description: "voip over 5120", request: {
            pushRequest(pushType: "voip", topic: testBundleID + ".voip", jwt: $0, body: payload(ofSize: 5121))
        }, status: 413, reason: "PayloadTooLarge"),
    ]

    @Test(arguments: cases)
    func brokenRuleGetsAPNsAnswer(_ rule: Case) async throws {
        let harness = try SimulatorHarness(key: signingKey())
        defer { harness.stop() }
        let connection = try await harness.connect()
        let response = try await connection.send(rule.request(try makeJWT()))
        #expect(response.status == rule.status)
        #expect(response.reason == rule.reason)
        #expect(response.headers.value(of: "apns-id") != nil)
    }

    @Test func rightSizesAndTopicsPassForEveryPushTypeSize() async throws {
        let harness = try SimulatorHarness(key: signingKey())
        defer { harness.stop() }
        let connection = try await harness.connect()
        let jwt = try makeJWT()
        #expect(try await connection.send(pushRequest(jwt: jwt, body: payload(ofSize: 4096))).status == 200)
        #expect(try await connection.send(pushRequest(pushType: "voip", topic: testBundleID + ".voip", jwt: jwt,
                                                      body: payload(ofSize: 5120))).status == 200)
        #expect(try await connection.send(pushRequest(pushType: "background", topic: testBundleID, priority: "5", jwt: jwt,
                                                      body: Array(#"{"aps":{"content-available":1}}"#.utf8))).status == 200)
        #expect(try await connection.send(pushRequest(pushType: "liveactivity", topic: testBundleID + ".push-type.liveactivity",
                                                      priority: "5", jwt: jwt,
                                                      extraHeaders: [HeaderField("apns-expiration", "0"),
                                                                     HeaderField("apns-collapse-id", String(repeating: "c", count: 64))]))
            .status == 200)
        // Uppercase hex in the token is accepted; the push type may be omitted (alert is assumed).
        #expect(try await connection.send(pushRequest(token: testDeviceToken.uppercased(), pushType: nil, jwt: jwt)).status == 200)
    }
}
