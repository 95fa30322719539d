import Foundation
import PGPushCore
import PushCrypto
import Testing
@testable import WebPushClient
@testable import WebPushSimulator

/// The simulator's push service against pgpush's client pieces: a message the client builds
/// and signs is accepted and read back; each thing a push service refuses is refused with the
/// answer that WebPushPolicy then reads as the README's table says.
struct WebPushSimulatorRulesTests {
    static let origin = "https://127.0.0.1:8443"
    static let now = Date(timeIntervalSince1970: 1_780_000_000)

    struct Setup {
        var rules = WebPushSimulatorRules(origin: WebPushSimulatorRulesTests.origin)
        var state = WebPushSimulatorRules.State()
        let vapidKey = try! ES256PrivateKey.generate()
        var subscription: SimulatedSubscription!

        init() throws {
            subscription = try rules.mint(applicationServerKey: vapidKey.uncompressedPublicKey(), state: &state)
        }

        func message(_ payload: String = #"{"title":"Hello"}"#, topic: String? = nil) throws -> WebPushMessage {
            let parsed = try WebPushSubscription(json: Array(subscription.json(origin: WebPushSimulatorRulesTests.origin).utf8))
            return try WebPushMessage(subscription: parsed, payload: Array(payload.utf8), priority: 10, timeToLive: 60,
                                      deliverOnce: false, topic: topic)
        }

        func authorization(key: ES256PrivateKey? = nil, audience: String = WebPushSimulatorRulesTests.origin,
                           at instant: Date = WebPushSimulatorRulesTests.now) throws -> String {
            try VAPIDSigner(key: key ?? vapidKey, subject: VAPIDSubject("mailto:ops@example.com"))
                .sign(audience: audience, now: instant).authorizationHeader
        }

        mutating func send(_ message: WebPushMessage, authorization: String?, body: [UInt8]? = nil,
                           at instant: Date = WebPushSimulatorRulesTests.now) -> (WebPushSimulatorAnswer, Delivery) {
            var headers = message.headers.map { ($0.name, $0.value) }
            if let authorization { headers.append(("authorization", authorization)) }
            let answer = rules.push(method: "POST", path: message.endpoint.target, headers: headers, body: body ?? message.body,
                                    now: instant, state: &state)
            let delivery = WebPushPolicy.delivery(
                status: answer.status, location: answer.headers.first { $0.0 == "location" }?.1, apnsID: nil,
                retryAfter: answer.headers.first { $0.0 == "retry-after" }?.1, body: answer.body,
                origin: PushServiceOrigin(host: "127.0.0.1", port: 8443), now: instant)
            return (answer, delivery)
        }
    }

    @Test func aMessageTheClientBuildsIsDeliveredAndReadBack() throws {
        var setup = try Setup()
        let (answer, delivery) = setup.send(try setup.message(#"{"title":"Hello","n":1}"#, topic: "scores"),
                                            authorization: try setup.authorization())
        #expect(answer.status == 201)
        #expect(delivery.verdict == .delivered && delivery.messageID == "https://127.0.0.1:8443/message/1")
        #expect(setup.state.report.deliveredPayloads == [#"{"title":"Hello","n":1}"#])
    }

    @Test func anotherApplicationServerKeyIsAKeyMismatch() throws {
        var setup = try Setup()
        let (answer, delivery) = setup.send(try setup.message(), authorization: try setup.authorization(key: ES256PrivateKey.generate()))
        #expect(answer.status == 403)
        #expect(delivery.verdict == .failed(listsTarget: false) && delivery.reason == "VapidKeyMismatch")
    }

    @Test func aTokenThatIsExpiredMissingOrForAnotherOriginPausesTheOrigin() throws {
        var setup = try Setup()
        let message = try setup.message()
        for authorization in [try setup.authorization(at: Self.now - 13 * 3600), try setup.authorization(audience: "https://push.example.net"),
                              nil, "vapid t=abc, k=def", "WebPush " + String(try setup.authorization().dropFirst(8))] {
            let (answer, delivery) = setup.send(message, authorization: authorization)
            #expect(answer.status == 401, "\(String(describing: authorization))")
            guard case .paused(.requestScope, _) = delivery.verdict else { Issue.record("\(delivery.verdict)"); continue }
        }
        #expect(setup.state.report.delivered == 0 && setup.state.report.refusals["InvalidVapidToken"] == 5)
    }

    @Test func aGoneOrUnknownSubscriptionIsListed() throws {
        var setup = try Setup()
        let message = try setup.message()
        setup.state.gone.insert(setup.subscription.id)
        #expect(setup.send(message, authorization: try setup.authorization()).1.verdict == .failed(listsTarget: true))
        setup.state.gone.removeAll()
        setup.state.subscriptions.removeAll()
        let (answer, delivery) = setup.send(message, authorization: try setup.authorization())
        #expect(answer.status == 404 && delivery.verdict == .failed(listsTarget: true))
    }

    @Test func aBodyThatDoesNotOpenOrIsTooLargeFails() throws {
        var setup = try Setup()
        let message = try setup.message()
        var altered = message.body
        altered[altered.count - 1] ^= 1
        let (answer, delivery) = setup.send(message, authorization: try setup.authorization(), body: altered)
        #expect(answer.status == 400 && delivery.reason == "BadRequest" && delivery.verdict == .failed(listsTarget: false))
        #expect(delivery.detail?.hasPrefix("DecryptionFailed") == true)
        let (large, _) = setup.send(message, authorization: try setup.authorization(), body: message.body + [UInt8](repeating: 0, count: 4096))
        #expect(large.status == 413)
    }

    @Test func faultsAnswerWithRetryAfter() throws {
        var setup = try Setup()
        setup.rules = WebPushSimulatorRules(origin: Self.origin, faults: {
            var faults = WebPushSimulatorFaults()
            faults.unavailableEvery = 2
            faults.retryAfterSeconds = 7
            return faults
        }())
        let message = try setup.message()
        #expect(setup.send(message, authorization: try setup.authorization()).0.status == 201)
        let (answer, delivery) = setup.send(message, authorization: try setup.authorization())
        #expect(answer.status == 503 && delivery.verdict == .serverTrouble(notBefore: .seconds(7)))
    }
}
