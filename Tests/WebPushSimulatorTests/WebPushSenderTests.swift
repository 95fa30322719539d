import Foundation
import PGPushCore
import PGPushTestSupport
import PushCrypto
import Testing
import WebPushClient
import WebPushSimulator

/// The sender against the simulator over TLS: an origin's connections are opened when a row
/// needs them and closed when idle, and opened again for the next row.
struct WebPushSenderOverTLSTests {
    @Test func anOriginsConnectionsCloseWhenIdleAndOpenWhenNeeded() async throws {
        let simulator = WebPushSimulator()
        try simulator.start()
        defer { simulator.stop() }
        let origin = try #require(simulator.origin)
        let key = try ES256PrivateKey.generate()
        var configuration = WebPushSenderConfiguration(
            appName: "web", signer: try VAPIDSigner(key: key, subject: VAPIDSubject("mailto:ops@example.com")))
        configuration.allowedOrigins = try AllowedOrigins(origin)
        configuration.extraCAFile = simulator.caCertificatePath
        configuration.connection.connections = 1
        // A loaded machine (a core kept busy beside the suite) once took longer than the
        // default 10 s to connect; this test is about what happens after.
        configuration.connection.requestTimeout = .seconds(300)
        configuration.connection.connectTimeout = .seconds(300)
        configuration.idleTimeout = .milliseconds(400)
        let sender = try WebPushSender(configuration: configuration)
        let subscription = try simulator.mint(applicationServerKey: try key.uncompressedPublicKey())
        let row = PushNotification(id: 1, service: .webpush, deviceToken: "", payload: Array(#"{"n":1}"#.utf8),
                                   subscription: Array(subscription.json(origin: origin).utf8))
        #expect(sender.openOrigins.isEmpty)
        #expect(await sender.send(try sender.prepare(row)).verdict == .delivered)
        #expect(sender.openOrigins.map(\.description) == [origin])
        #expect(sender.statistics.liveConnections == 1)
        #expect(try await eventually(timeout: stateWaitLimit) { sender.openOrigins.isEmpty && sender.statistics.liveConnections == 0 },
                "the idle origin's connection was not closed")
        #expect(await sender.send(try sender.prepare(row)).verdict == .delivered)
        #expect(sender.openOrigins.count == 1)
        await sender.shutdown()
        #expect(simulator.report().delivered == 2)
    }
}
