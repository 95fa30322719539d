import Foundation
import HTTP2TLS
import Locking
import PushCrypto

/// A Web Push service look-alike over real TLS, for tests, the demo and the bench:
/// `POST /push/<id>` for each subscription it minted (`mint`), checked and answered by
/// `WebPushSimulatorRules`, the plaintext of each accepted message kept in its report. It
/// speaks HTTP/2 or HTTP/1.1, as the client asks in ALPN (h2 first), or only one of them
/// (`protocols`): some push services answer HTTP/1.1 unless asked for h2.
package final class WebPushSimulator: Sendable {
    private let faults: WebPushSimulatorFaults
    private let protocols: ServerProtocols
    private let handler = Handler()
    private let running = Locked<(server: HTTP2Server, identity: TemporaryServerIdentity)?>(nil)

    package init(faults: WebPushSimulatorFaults = WebPushSimulatorFaults(), protocols: ServerProtocols = .h2AndHTTP1) {
        self.faults = faults
        self.protocols = protocols
    }

    deinit { stop() }

    /// Starts listening on 127.0.0.1 with a certificate from a fresh authority; returns the port.
    @discardableResult
    package func start(port: Int = 0) throws -> Int {
        let identity = try TemporaryServerIdentity(name: "mock-webpush")
        var configuration = HTTP2ServerConfiguration(certificateChain: .text(identity.certificatePEM), privateKey: .text(identity.privateKeyPEM))
        configuration.port = port
        configuration.protocols = protocols
        let server = try HTTP2Server(configuration: configuration, handler: handler, threadName: "mock-webpush")
        handler.state.withLock { $0.rules = WebPushSimulatorRules(origin: "https://127.0.0.1:\(server.port)", faults: faults) }
        running.withLock { $0 = (server, identity) }
        return server.port
    }

    /// The PEM file of the authority that signed the server's certificate, while running.
    package var caCertificatePath: String? { running.withLock { $0?.identity.caPath } }

    /// `https://127.0.0.1:port` while running: the push service's origin.
    package var origin: String? { handler.state.withLock { $0.rules?.origin } }

    /// A new browser subscription for a web app whose VAPID public key is `applicationServerKey`;
    /// its `json(origin:)` is what the web app would store in a row.
    package func mint(applicationServerKey: [UInt8]) throws -> SimulatedSubscription {
        try handler.state.withLock { held throws -> SimulatedSubscription in
            guard let rules = held.rules else { throw WebPushSimulatorError("start the simulator first") }
            return try rules.mint(applicationServerKey: applicationServerKey, state: &held.state)
        }
    }

    /// Answers 410 for the subscription from now on, as after the browser dropped it.
    package func drop(_ subscription: SimulatedSubscription) {
        handler.state.withLock { _ = $0.state.gone.insert(subscription.id) }
    }

    package func report() -> WebPushSimulatorReport { handler.state.withLock { $0.state.report } }

    package func stop() {
        guard let stopped = running.withLock({ running in defer { running = nil }; return running }) else { return }
        stopped.server.shutdown()
        stopped.identity.remove()
    }

    final class Handler: HTTP2ServerHandler {
        let state = Locked<(rules: WebPushSimulatorRules?, state: WebPushSimulatorRules.State)>((nil, WebPushSimulatorRules.State()))

        func handle(_ request: ServerRequest, responder: ServerResponder) {
            let now = Date()
            let headers = request.headers.map { ($0.name, $0.value) }
            let answer = state.withLock { held -> WebPushSimulatorAnswer? in
                held.rules?.push(method: request.method, path: request.path, headers: headers, body: request.body, now: now,
                                 state: &held.state)
            } ?? WebPushSimulatorAnswer(status: 503, headers: [], body: [])
            responder.respond(status: answer.status, headers: answer.headers.map { HeaderField($0.0, $0.1) }, body: answer.body)
        }
    }
}

package struct WebPushSimulatorError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
