import Foundation
import PGPushCore
import PushCrypto
import PushTransport
import Testing
@testable import WebPushClient

/// What the sender decides before any connection: which rows it refuses and why, and the
/// request a row becomes.
struct WebPushSenderTests {
    static func sender(allowed: String = "https://fcm.googleapis.com, https://*.push.apple.com") throws -> WebPushSender {
        var configuration = WebPushSenderConfiguration(
            appName: "web", signer: try VAPIDSigner(key: ES256PrivateKey.generate(), subject: VAPIDSubject("mailto:ops@example.com")))
        configuration.allowedOrigins = try AllowedOrigins(allowed)
        return try WebPushSender(configuration: configuration)
    }

    static func row(endpoint: String = "https://fcm.googleapis.com/fcm/send/abc", payload: String = #"{"a": 1}"#,
                    subscription: [UInt8]? = nil, expiration: Int64? = nil, collapseID: String? = nil) -> PushNotification {
        PushNotification(id: 1, service: .webpush, deviceToken: "", payload: Array(payload.utf8), collapseID: collapseID,
                         expiration: expiration, subscription: subscription ?? WebPushMessageTests.subscriptionJSON(endpoint: endpoint))
    }

    static func refusal(_ row: PushNotification, by sender: WebPushSender) -> RowRefusal? {
        do {
            _ = try sender.prepare(row)
            return nil
        } catch {
            return error
        }
    }

    /// Only the allowed origins: another host, another port, a host under an allowed domain
    /// only when the entry is a wildcard, an address literal, plain http.
    @Test func endpointsOutsideTheAllowListAreRefusedBeforeAnyConnection() throws {
        let sender = try Self.sender()
        for endpoint in ["https://evil.example/push", "https://fcm.googleapis.com:8443/fcm/send/x", "https://a.fcm.googleapis.com/x",
                         "https://127.0.0.1/push", "https://[::1]/push", "http://fcm.googleapis.com/fcm/send/x",
                         "https://push.apple.com.evil.example/x", "https://user@fcm.googleapis.com/x"] {
            let refusal = Self.refusal(Self.row(endpoint: endpoint), by: sender)
            #expect(refusal?.reason == "EndpointNotAllowed", "\(endpoint): \(String(describing: refusal))")
        }
        for endpoint in ["https://fcm.googleapis.com/fcm/send/x", "https://web.push.apple.com/QGuQ", "https://api.push.apple.com/x"] {
            #expect(Self.refusal(Self.row(endpoint: endpoint), by: sender) == nil, "\(endpoint)")
        }
        #expect(sender.openOrigins.isEmpty)
    }

    @Test func aRowWithoutAUsableSubscriptionIsRefused() throws {
        let sender = try Self.sender()
        var row = Self.row()
        row.subscription = nil
        #expect(Self.refusal(row, by: sender)?.reason == "InvalidSubscription")
        #expect(Self.refusal(Self.row(subscription: Array(#"{"endpoint":"https://fcm.googleapis.com/x"}"#.utf8)), by: sender)?.reason
                == "InvalidSubscription")
        #expect(Self.refusal(Self.row(collapseID: "score"), by: sender)?.reason == "InvalidTopic")
        #expect(Self.refusal(Self.row(payload: "\"" + String(repeating: "x", count: 3992) + "\""), by: sender)?.reason == "PayloadTooLarge")
    }

    /// The request: the endpoint's path, the payload compact and sealed, TTL from `expires_at`,
    /// the scope its origin.
    @Test func aRowBecomesARequestToItsEndpoint() throws {
        let sender = try Self.sender()
        let now = Int64(Date().timeIntervalSince1970)
        let message = try sender.prepare(Self.row(endpoint: "https://fcm.googleapis.com/fcm/send/abc?x=1", expiration: now + 600,
                                                  collapseID: "news"))
        #expect(message.endpoint.target == "/fcm/send/abc?x=1")
        #expect(sender.scope(of: message) == "https://fcm.googleapis.com")
        let ttl = Int(WebPushMessageTests.header("ttl", of: message) ?? "") ?? -1
        #expect((590...600).contains(ttl), "ttl \(ttl)")
        #expect(WebPushMessageTests.header("topic", of: message) == "news")
        let opened = try WebPushEncryption.open(message.body, recipient: WebPushMessageTests.browser, auth: WebPushMessageTests.auth)
        #expect(String(decoding: opened, as: UTF8.self) == #"{"a":1}"#)
        #expect(WebPushSender.authority(PushServiceOrigin(host: "127.0.0.1", port: 8443)) == "127.0.0.1:8443")
        #expect(WebPushSender.authority(PushServiceOrigin(host: "::1", port: 443)) == "[::1]")
    }
}

/// `OriginPools` with a clock that moves only when told.
struct OriginPoolsTests {
    static let start = ContinuousClock.now
    static func origin(_ host: String) -> PushServiceOrigin { PushServiceOrigin(host: host) }

    @Test func anOriginsPoolIsMadeOnceAndShared() {
        var pools = OriginPools<String>(limit: 4, idleTimeout: .seconds(60))
        var made = 0
        for _ in 0..<3 {
            guard case .use(let pool, nil) = pools.checkOut(Self.origin("a.example"), at: Self.start, make: { made += 1; return "a" }) else {
                Issue.record("not used"); return
            }
            #expect(pool == "a")
        }
        #expect(made == 1 && pools.origins.count == 1)
    }

    @Test func idleOriginsCloseAfterTheTimeoutAndBusyOnesDoNot() {
        var pools = OriginPools<String>(limit: 4, idleTimeout: .seconds(60))
        _ = pools.checkOut(Self.origin("idle.example"), at: Self.start) { "idle" }
        pools.checkIn(Self.origin("idle.example"), at: Self.start)
        _ = pools.checkOut(Self.origin("busy.example"), at: Self.start) { "busy" }
        #expect(pools.takeIdle(at: Self.start + .seconds(59)).isEmpty)
        #expect(pools.takeIdle(at: Self.start + .seconds(61)) == ["idle"])
        #expect(pools.origins == [Self.origin("busy.example")])
        pools.checkIn(Self.origin("busy.example"), at: Self.start + .seconds(61))
        #expect(pools.takeIdle(at: Self.start + .seconds(100)).isEmpty)
        #expect(pools.takeIdle(at: Self.start + .seconds(121)) == ["busy"])
    }

    @Test func atTheLimitTheLeastRecentlyUsedIdleOriginMakesRoom() {
        var pools = OriginPools<String>(limit: 2, idleTimeout: .seconds(60))
        for (index, host) in ["a", "b"].enumerated() {
            _ = pools.checkOut(Self.origin(host), at: Self.start + .seconds(index)) { host }
            pools.checkIn(Self.origin(host), at: Self.start + .seconds(index))
        }
        guard case .use("c", let closing) = pools.checkOut(Self.origin("c"), at: Self.start + .seconds(5), make: { "c" }) else {
            Issue.record("c not opened"); return
        }
        #expect(closing == "a")
        // b idle, c busy: d takes b's place; then both busy: full.
        guard case .use("d", "b") = pools.checkOut(Self.origin("d"), at: Self.start + .seconds(6), make: { "d" }) else {
            Issue.record("d not opened"); return
        }
        guard case .full = pools.checkOut(Self.origin("e"), at: Self.start + .seconds(7), make: { "e" }) else {
            Issue.record("not full"); return
        }
        #expect(Set(pools.shutDown()) == ["c", "d"])
        guard case .shutDown = pools.checkOut(Self.origin("a"), at: Self.start + .seconds(8), make: { "a" }) else {
            Issue.record("open after shutdown"); return
        }
    }
}
