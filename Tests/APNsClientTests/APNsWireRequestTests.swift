@testable import APNsClient
import APNsCore
import Foundation
import HTTP2TLS
import PGPushCore
import Testing

/// How a validated `APNsRequest` is written as an HTTP/2 request: path, authority and the
/// `apns-*` headers, with their HPACK indexing.
struct APNsWireRequestTests {
    static let apnsID = UUID(uuidString: "0A1B2C3D-4E5F-6A7B-8C9D-0E1F2A3B4C5D")!
    static let channel = "dGhlIGNoYW5uZWw="
    static let update = #"{"aps": {"event": "update", "timestamp": 1700000000, "content-state": {"score": "1-0"}}}"#
    static let token = ProviderToken(jwt: "eyJ.jwt.sig", keyID: "KEY1234567", issuedAt: Date(timeIntervalSince1970: 0))

    static func device(pushType: String = "voip", payload: String = "{}", expiration: Int64? = nil,
                       collapseID: String? = nil, authentication: AuthenticationMethod = .token) throws -> APNsRequest {
        try PushNotification(
            id: 1, deviceToken: "ABCDEF01", pushType: pushType, payload: Array(payload.utf8), collapseID: collapseID,
            expiration: expiration, apnsID: apnsID
        ).validated(bundleID: "com.example.app", authentication: authentication)
    }

    static func broadcast(priority: Int? = nil, topic: String? = nil, expiration: Int64? = nil,
                          authentication: AuthenticationMethod = .token) throws -> APNsRequest {
        try PushNotification(
            id: 9, deviceToken: "", pushType: "liveactivity", priority: priority, topic: topic, payload: Array(update.utf8),
            expiration: expiration, apnsID: apnsID, channelID: channel
        ).validated(bundleID: "com.example.app", authentication: authentication)
    }

    static func wire(_ request: APNsRequest, authority: String = "api.push.apple.com",
                     providerToken: ProviderToken? = nil) -> HTTP2Request {
        APNsWireRequest.make(for: request, authority: authority, providerToken: providerToken, timeout: .seconds(7))
    }

    @Test func deviceRequestWithTokenAuthentication() throws {
        let wire = Self.wire(try Self.device(expiration: 1_900_000_000, collapseID: "game-1"), providerToken: Self.token)
        #expect(wire.method == "POST")
        #expect(wire.path == "/3/device/abcdef01")
        #expect(wire.authority == "api.push.apple.com")
        #expect(wire.body == Array("{}".utf8))
        #expect(wire.timeout == .seconds(7))
        #expect(wire.headers == [
            HeaderField("authorization", "bearer eyJ.jwt.sig", neverIndex: false),
            HeaderField("apns-push-type", "voip", neverIndex: false),
            HeaderField("apns-id", "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d", neverIndex: true),
            HeaderField("apns-expiration", "1900000000", neverIndex: true),
            HeaderField("apns-priority", "10", neverIndex: false),
            HeaderField("apns-topic", "com.example.app.voip", neverIndex: false),
            HeaderField("apns-collapse-id", "game-1", neverIndex: true),
        ])
    }

    @Test func minimalDeviceRequestWithCertificate() throws {
        let wire = Self.wire(try Self.device(), authority: "api.sandbox.push.apple.com:2197")
        #expect(wire.authority == "api.sandbox.push.apple.com:2197")
        #expect(wire.headers.map(\.name) == ["apns-push-type", "apns-id", "apns-priority", "apns-topic"])
    }

    @Test func expirationZeroIsSent() throws {
        #expect(Self.wire(try Self.device(expiration: 0)).headers.value(of: "apns-expiration") == "0")
        // Push-to-talk is tried once unless the row says otherwise.
        let talk = try Self.device(pushType: "pushtotalk", payload: #"{"speaker":"Ann"}"#)
        #expect(Self.wire(talk).headers.contains(HeaderField("apns-expiration", "0", neverIndex: true)))
    }

    /// Across push types, both recipients and both kinds of authentication: names are
    /// lowercase and unique, and no pseudo-header is among them (the transport writes those).
    @Test func namesAreLowercaseUniqueAndRegular() throws {
        var requests = [try Self.broadcast(), try Self.broadcast(priority: 5, expiration: 7)]
        for type in PushType.allCases {
            for (expiration, collapseID) in [(nil, nil), (5, "c")] as [(Int64?, String?)] {
                let payload = type == .liveactivity ? Self.update : #"{"aps":{}}"#
                if let request = try? Self.device(pushType: type.rawValue, payload: payload, expiration: expiration,
                                                  collapseID: collapseID) {
                    requests.append(request)
                }
            }
        }
        #expect(requests.count > PushType.allCases.count)
        for request in requests {
            for providerToken in [nil, Self.token] {
                let names = Self.wire(request, providerToken: providerToken).headers.map(\.name)
                #expect(Set(names).count == names.count)
                #expect(names.allSatisfy { $0 == $0.lowercased() && !$0.hasPrefix(":") })
                #expect(names.contains("authorization") == (providerToken != nil))
            }
        }
    }

    @Test func broadcastGoesToTheAppsBroadcastPathWithItsHeaders() throws {
        let wire = Self.wire(try Self.broadcast(priority: 5, expiration: 1_900_000_000), providerToken: Self.token)
        #expect(wire.method == "POST")
        #expect(wire.path == "/4/broadcasts/apps/com.example.app")
        #expect(wire.authority == "api.push.apple.com")
        #expect(wire.body == Array(#"{"aps":{"event":"update","timestamp":1700000000,"content-state":{"score":"1-0"}}}"#.utf8))
        #expect(wire.headers == [
            HeaderField("authorization", "bearer eyJ.jwt.sig", neverIndex: false),
            HeaderField("apns-push-type", "liveactivity", neverIndex: false),
            HeaderField("apns-request-id", "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d", neverIndex: true),
            HeaderField("apns-expiration", "1900000000", neverIndex: true),
            HeaderField("apns-priority", "5", neverIndex: false),
            HeaderField("apns-channel-id", Self.channel, neverIndex: true),
        ])
    }

    @Test func broadcastAlwaysSendsExpirationAndPriorityAndNoTopicIDOrCollapseID() throws {
        let names = Self.wire(try Self.broadcast(authentication: .certificate)).headers.map(\.name)
        #expect(names.contains("apns-expiration") && names.contains("apns-priority"))
        #expect(!names.contains("apns-topic") && !names.contains("apns-id") && !names.contains("apns-collapse-id"))
        // An explicit topic is the bundle id in the path.
        #expect(Self.wire(try Self.broadcast(topic: "com.other.app")).path == "/4/broadcasts/apps/com.other.app")
    }
}
