import APNsCore
import Foundation
import PGPushCore
import Testing

/// A validated row in APNs's terms; how it is written on the wire is `APNsWireRequestTests`'s.
struct APNsRequestTests {
    static func request(expiration: Int64? = nil, collapseID: String? = nil) throws -> APNsRequest {
        try PushNotification(
            id: 1, deviceToken: "ABCDEF01", pushType: "voip", payload: Array("{}".utf8), collapseID: collapseID,
            expiration: expiration, apnsID: UUID(uuidString: "0A1B2C3D-4E5F-6A7B-8C9D-0E1F2A3B4C5D")!
        ).validated(bundleID: "com.example.app", authentication: .token)
    }

    @Test func deviceRequestCarriesEveryAPNsSetting() throws {
        let request = try Self.request(expiration: 1_900_000_000, collapseID: "game-1")
        #expect(request.notificationID == 1)
        #expect(request.recipient == .device(try DeviceToken(validating: "abcdef01")))
        #expect(request.pushType == .voip)
        #expect(request.topic == "com.example.app.voip")
        #expect(request.priority == .immediate && request.priority.headerValue == "10")
        #expect(request.apnsID.lowercasedString == "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d")
        #expect(request.expiration == 1_900_000_000)
        #expect(request.collapseID == "game-1")
        #expect(request.body == Array("{}".utf8))
    }

    @Test func minimalRequestLeavesExpirationAndCollapseIDUnset() throws {
        let request = try Self.request()
        #expect(request.expiration == nil)
        #expect(request.collapseID == nil)
    }

    @Test func expirationZeroIsKept() throws {
        #expect(try Self.request(expiration: 0).expiration == 0)
    }
}
