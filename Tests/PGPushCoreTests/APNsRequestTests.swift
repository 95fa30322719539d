import Foundation
import Testing
@testable import PGPushCore

struct APNsRequestTests {
    static func request(expiration: Int64? = nil, collapseID: String? = nil) throws -> APNsRequest {
        try PushNotification(
            id: 1, deviceToken: "ABCDEF01", pushType: "voip", payload: Array("{}".utf8), collapseID: collapseID,
            expiration: expiration, apnsID: UUID(uuidString: "0A1B2C3D-4E5F-6A7B-8C9D-0E1F2A3B4C5D")!
        ).validated(bundleID: "com.example.app", authentication: .token)
    }

    @Test func fullHeaderListWithTokenAuthentication() throws {
        let fields = try Self.request(expiration: 1_900_000_000, collapseID: "game-1")
            .headerFields(authority: "api.push.apple.com", providerToken: "eyJ.jwt.sig")
        #expect(fields == [
            HeaderField(name: ":method", value: "POST", neverIndex: false),
            HeaderField(name: ":scheme", value: "https", neverIndex: false),
            HeaderField(name: ":authority", value: "api.push.apple.com", neverIndex: false),
            HeaderField(name: ":path", value: "/3/device/abcdef01", neverIndex: true),
            HeaderField(name: "authorization", value: "bearer eyJ.jwt.sig", neverIndex: false),
            HeaderField(name: "apns-push-type", value: "voip", neverIndex: false),
            HeaderField(name: "apns-id", value: "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d", neverIndex: true),
            HeaderField(name: "apns-expiration", value: "1900000000", neverIndex: true),
            HeaderField(name: "apns-priority", value: "10", neverIndex: false),
            HeaderField(name: "apns-topic", value: "com.example.app.voip", neverIndex: false),
            HeaderField(name: "apns-collapse-id", value: "game-1", neverIndex: true),
        ])
    }

    @Test func minimalHeaderListWithCertificate() throws {
        let fields = try Self.request().headerFields(authority: "api.sandbox.push.apple.com:2197", providerToken: nil)
        #expect(fields.map(\.name) == [
            ":method", ":scheme", ":authority", ":path", "apns-push-type", "apns-id", "apns-priority", "apns-topic",
        ])
    }

    @Test func expirationZeroIsSent() throws {
        let fields = try Self.request(expiration: 0).headerFields(authority: "h", providerToken: nil)
        #expect(fields.first { $0.name == "apns-expiration" }?.value == "0")
    }

    @Test func namesAreLowercaseAndUniqueAndPseudoHeadersComeFirst() throws {
        let fields = try Self.request(expiration: 5, collapseID: "c").headerFields(authority: "h", providerToken: "t")
        let names = fields.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(names.allSatisfy { $0 == $0.lowercased() })
        let firstRegular = try #require(names.firstIndex { !$0.hasPrefix(":") })
        #expect(names[firstRegular...].allSatisfy { !$0.hasPrefix(":") })
    }

    @Test func descriptionNeverShowsTheJWT() {
        let field = HeaderField(name: "authorization", value: "bearer secret.jwt.value", neverIndex: false)
        #expect(!field.description.contains("secret"))
        #expect(HeaderField(name: "apns-topic", value: "t", neverIndex: false).description == "apns-topic: t")
    }
}
