import Foundation
import HTTP2TLS
import Locking
import PushCrypto

/// An FCM look-alike over real TLS + HTTP/2: Google's token endpoint (`POST /token`, the
/// JWT bearer grant) and `POST /v1/projects/<project>/messages:send` on one server, for
/// tests, the demo and the bench. Point a service-account file's `token_uri` at
/// `baseURL + "/token"` and `fcm_url` at `baseURL`.
package final class FCMSimulator: Sendable {
    package let configuration: FCMSimulatorConfiguration
    private let handler: Handler
    private let running = Locked<(server: HTTP2Server, identity: TemporaryServerIdentity)?>(nil)

    package init(configuration: FCMSimulatorConfiguration) {
        self.configuration = configuration
        handler = Handler(rules: FCMSimulatorRules(configuration: configuration))
    }

    deinit { stop() }

    /// Starts listening with a certificate from a fresh authority; returns the bound port.
    @discardableResult
    package func start() throws -> Int {
        let identity = try TemporaryServerIdentity(name: "mock-fcm")
        var serverConfiguration = HTTP2ServerConfiguration(certificateChain: .text(identity.certificatePEM),
                                                           privateKey: .text(identity.privateKeyPEM))
        serverConfiguration.host = configuration.host
        serverConfiguration.port = configuration.port
        let server = try HTTP2Server(configuration: serverConfiguration, handler: handler, threadName: "mock-fcm")
        running.withLock { $0 = (server, identity) }
        return server.port
    }

    /// The PEM file of the authority that signed the server's certificate, while running.
    package var caCertificatePath: String? { running.withLock { $0?.identity.caPath } }

    /// `https://127.0.0.1:port` while running.
    package var baseURL: String? { running.withLock { $0.map { "https://127.0.0.1:\($0.server.port)" } } }

    package func report() -> FCMSimulatorReport { handler.state.withLock { $0.report } }

    package func stop() {
        guard let stopped = running.withLock({ running in defer { running = nil }; return running }) else { return }
        stopped.server.shutdown()
        stopped.identity.remove()
    }

    final class Handler: HTTP2ServerHandler {
        let rules: FCMSimulatorRules
        let state = Locked(FCMSimulatorRules.State())

        init(rules: FCMSimulatorRules) { self.rules = rules }

        func handle(_ request: ServerRequest, responder: ServerResponder) {
            let now = Date()
            let headers = request.headers.map { ($0.name, $0.value) }
            let answer = state.withLock { state -> FCMSimulatorAnswer in
                switch (request.method, request.path) {
                case ("POST", "/token"):
                    rules.token(body: request.body, now: now, state: &state)
                case ("POST", _):
                    rules.send(path: request.path, headers: headers, body: request.body, now: now, state: &state)
                default:
                    FCMSimulatorRules.status(405, "INVALID_ARGUMENT", "Method not allowed", state: &state)
                }
            }
            responder.respond(status: answer.status, headers: answer.headers.map { HeaderField($0.0, $0.1) }, body: answer.body)
        }
    }
}
