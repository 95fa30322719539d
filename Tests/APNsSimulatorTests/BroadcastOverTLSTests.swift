import APNsSimulator
import Foundation
import HTTP2TLS
import PGPushCore
import PGPushTestSupport
import Testing

/// The simulator's broadcast endpoint and channel management API, over TLS + HTTP/2, with
/// Apple's paths, headers, answers and reasons.
@Suite struct BroadcastOverTLSTests {
    static let update = Array(#"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#.utf8)

    static func request(_ method: String, _ path: String, jwt: String?, headers: [(String, String)] = [],
                        body: [UInt8] = []) -> HTTP2Request {
        var fields: [HTTP2TLS.HeaderField] = []
        if let jwt { fields.append(HTTP2TLS.HeaderField("authorization", "bearer \(jwt)", neverIndex: true)) }
        fields += headers.map { HTTP2TLS.HeaderField($0.0, $0.1) }
        return HTTP2Request(method: method, path: path, headers: fields, body: body)
    }

    static func broadcast(channel: String?, jwt: String?, priority: String? = "10", expiration: String? = "0",
                          pushType: String? = "liveactivity", bundleID: String = testBundleID,
                          body: [UInt8] = update) -> HTTP2Request {
        var headers: [(String, String)] = []
        if let channel { headers.append(("apns-channel-id", channel)) }
        if let pushType { headers.append(("apns-push-type", pushType)) }
        if let priority { headers.append(("apns-priority", priority)) }
        if let expiration { headers.append(("apns-expiration", expiration)) }
        return request("POST", "/4/broadcasts/apps/\(bundleID)", jwt: jwt, headers: headers, body: body)
    }

    static let channelsPath = "/1/apps/\(testBundleID)/channels"

    @Test func managesChannelsAndBroadcastsToThemWithApplesAnswers() async throws {
        let harness = try SimulatorHarness(key: signingKey()) { $0.environment = .production }
        defer { harness.stop() }
        let connection = try await harness.connect()
        let jwt = try makeJWT()

        // Create answers 201 with the new id in apns-channel-id and an empty body.
        let created = try await connection.send(Self.request("POST", Self.channelsPath, jwt: jwt,
            body: Array(#"{"message-storage-policy":0,"push-type":"LiveActivity"}"#.utf8)))
        #expect(created.status == 201 && created.body.isEmpty)
        let channel = try #require(created.headers.value(of: "apns-channel-id"))
        #expect(Data(base64Encoded: channel) != nil)

        let read = try await connection.send(Self.request("GET", Self.channelsPath, jwt: jwt, headers: [("apns-channel-id", channel)]))
        #expect(read.status == 200)
        let described = try JSONSerialization.jsonObject(with: Data(read.body)) as? [String: Any]
        #expect(described?["message-storage-policy"] as? Int == 0 && described?["push-type"] as? String == "LiveActivity")
        let listed = try await connection.send(Self.request("GET", "/1/apps/\(testBundleID)/all-channels", jwt: jwt))
        #expect((try JSONSerialization.jsonObject(with: Data(listed.body)) as? [String: [String]])?["channels"] == [channel])

        // Broadcasts: accepted with apns-unique-id (production too); a no-storage channel takes expiration 0 only.
        let sent = try await connection.send(Self.broadcast(channel: channel, jwt: jwt))
        #expect(sent.status == 200)
        #expect(sent.headers.value(of: "apns-unique-id") != nil && sent.headers.value(of: "apns-request-id") != nil)
        #expect(try await connection.send(Self.broadcast(channel: channel, jwt: jwt, expiration: "1900000000")).reason == "BadExpirationDate")

        // Delete answers 204; the channel is gone for broadcasts and reads alike.
        let deleted = try await connection.send(Self.request("DELETE", Self.channelsPath, jwt: jwt, headers: [("apns-channel-id", channel)]))
        #expect(deleted.status == 204)
        #expect(try await connection.send(Self.broadcast(channel: channel, jwt: jwt)).reason == "ChannelNotRegistered")
        #expect(try await connection.send(Self.request("GET", Self.channelsPath, jwt: jwt,
                                                       headers: [("apns-channel-id", channel)])).reason == "ChannelNotRegistered")

        let report = harness.simulator.report()
        #expect(report.broadcasts(toChannel: channel) == 3)
        #expect(report.managementRequests == 5)
    }

    @Test func refusesBroadcastsThatBreakApplesRules() async throws {
        let known = "a25vd24="
        var faults = FaultPlan()
        faults.channelScripts = [known: [try ScriptedAnswer(parsing: "503")]]
        let harness = try SimulatorHarness(key: signingKey(), faults: faults) { $0.channels = [known: 1] }
        defer { harness.stop() }
        let connection = try await harness.connect()
        let jwt = try makeJWT()
        let cases: [(HTTP2Request, Int, String?)] = [
            (Self.broadcast(channel: known, jwt: nil), 403, "MissingProviderToken"),
            (Self.broadcast(channel: known, jwt: jwt, bundleID: "com.other.app"), 403, "TopicMismatch"),
            (Self.broadcast(channel: nil, jwt: jwt), 400, "MissingChannelId"),
            (Self.broadcast(channel: "not base64!", jwt: jwt), 400, "BadChannelId"),
            (Self.broadcast(channel: known, jwt: jwt, pushType: nil), 400, "MissingPushType"),
            (Self.broadcast(channel: known, jwt: jwt, pushType: "alert"), 400, "InvalidPushType"),
            (Self.broadcast(channel: known, jwt: jwt, priority: nil), 400, "BadPriority"),
            (Self.broadcast(channel: known, jwt: jwt, priority: "1"), 400, "BadPriority"),
            (Self.broadcast(channel: known, jwt: jwt, expiration: nil), 400, "BadExpirationDate"),
            (Self.broadcast(channel: known, jwt: jwt, body: []), 400, "PayloadEmpty"),
            (Self.broadcast(channel: known, jwt: jwt, body: payload(ofSize: 5121)), 413, "PayloadTooLarge"),
            (Self.broadcast(channel: "dW5rbm93bg==", jwt: jwt), 400, "ChannelNotRegistered"),
            (Self.broadcast(channel: known, jwt: jwt), 503, "ServiceUnavailable"),   // the channel's script
            (Self.broadcast(channel: known, jwt: jwt, body: payload(ofSize: 5120)), 200, nil),
            (Self.request("GET", "/4/broadcasts/apps/\(testBundleID)", jwt: jwt), 405, "MethodNotAllowed"),
            (Self.request("POST", "/1/apps/\(testBundleID)/nothing", jwt: jwt), 404, "BadPath"),
        ]
        for (request, status, reason) in cases {
            let answer = try await connection.send(request)
            #expect(answer.status == status && answer.reason == reason, "\(request.method) \(request.path)")
        }
    }

    @Test func managementRefusesBadBodiesTheLimitAndAppsWithoutTheFeature() async throws {
        var faults = FaultPlan()
        faults.managementScript = [try ScriptedAnswer(parsing: "TooManyRequests")]
        let harness = try SimulatorHarness(key: signingKey(), faults: faults) { $0.channelLimit = 1 }
        defer { harness.stop() }
        let connection = try await harness.connect()
        let jwt = try makeJWT()
        let create = { (body: String) in Self.request("POST", Self.channelsPath, jwt: jwt, body: Array(body.utf8)) }
        let good = #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#
        #expect(try await connection.send(create(good)).reason == "TooManyRequests")
        #expect(try await connection.send(create("{")).reason == "BadRequestPayload")
        #expect(try await connection.send(create(#"{"message-storage-policy":1,"push-type":"LiveActivity","x":1}"#)).reason == "BadRequestParams")
        #expect(try await connection.send(create(#"{"message-storage-policy":1}"#)).reason == "MissingPushType")
        #expect(try await connection.send(create(#"{"message-storage-policy":2,"push-type":"LiveActivity"}"#)).reason == "BadRequestParams")
        #expect(try await connection.send(create(good)).status == 201)
        #expect(try await connection.send(create(good)).reason == "CannotCreateChannelConfig")
        #expect(try await connection.send(Self.request("DELETE", Self.channelsPath, jwt: jwt)).reason == "MissingChannelId")

        let disabled = try SimulatorHarness(key: signingKey()) { $0.broadcastEnabled = false }
        defer { disabled.stop() }
        let other = try await disabled.connect()
        #expect(try await other.send(create(good)).reason == "FeatureNotEnabled")
        #expect(try await other.send(Self.broadcast(channel: "YQ==", jwt: jwt)).reason == "FeatureNotEnabled")
    }
}
