import Foundation
import HTTP2TLS
import PGPushCore
import PushCrypto
import Testing
import WebPushClient
@testable import WebPushSimulator

/// pgpush's Web Push pieces end to end over real TLS + HTTP/2 against the simulator: the
/// endpoint checked against the allow-list, the connection made only to the permitted
/// address, the message sealed and signed, the simulator decrypting exactly the payload.
struct WebPushOverTLSTests {
    @Test func aRowsMessageReachesTheSimulatorAndIsReadBackExactly() async throws {
        let simulator = WebPushSimulator()
        let port = try simulator.start()
        defer { simulator.stop() }
        let vapidKey = try ES256PrivateKey.generate()
        let origin = try #require(simulator.origin)
        let subscription = try simulator.mint(applicationServerKey: try vapidKey.uncompressedPublicKey())
        let stored = try WebPushSubscription(json: Array(subscription.json(origin: origin).utf8))
        let allowed = try AllowedOrigins("https://127.0.0.1:\(port)")
        #expect(allowed.allows(stored.endpoint.origin) && stored.endpoint.origin.description == origin)

        let payload = #"{"title":"Ready","body":"Your order shipped"}"#
        let message = try WebPushMessage(subscription: stored, payload: Array(payload.utf8), priority: 5, timeToLive: 3600,
                                         deliverOnce: false, topic: "order-42")
        let cache = VAPIDTokenCache(signer: try VAPIDSigner(key: vapidKey, subject: VAPIDSubject("mailto:ops@example.com")))
        let authorization = try cache.token(for: stored.endpoint.origin.description).authorizationHeader

        let client = try HTTP2Client(threadName: "webpush-test")
        defer { client.shutdown() }
        var configuration = HTTP2ClientConfiguration(tls: try ClientTLSContext(extraCAFile: simulator.caCertificatePath))
        let endpointOrigin = stored.endpoint.origin
        configuration.permitsAddress = { bytes in
            let address: IPAddress = bytes.count == 4 ? .v4(bytes) : .v6(bytes)
            return allowed.allows(address, for: endpointOrigin)
        }
        let connection = try await client.connect(host: endpointOrigin.host, port: endpointOrigin.port, configuration: configuration)
        let headers = message.headers.map { HeaderField($0.name, $0.value) } + [HeaderField("authorization", authorization)]
        let response = try await connection.send(HTTP2Request(path: message.endpoint.target, headers: headers, body: message.body))
        #expect(response.status == 201)
        let delivery = WebPushPolicy.delivery(status: response.status, location: response.headers.value(of: "location"),
                                              apnsID: nil, retryAfter: nil, body: response.body, origin: endpointOrigin)
        #expect(delivery.verdict == .delivered && delivery.messageID == "\(origin)/message/1")
        #expect(simulator.report().deliveredPayloads == [payload])

        simulator.drop(subscription)
        let gone = try await connection.send(HTTP2Request(path: message.endpoint.target, headers: headers, body: message.body))
        #expect(gone.status == 410)
    }
}
