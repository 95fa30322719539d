import APNsClient
import APNsCore
import Foundation
import HTTP2TLS
import Locking
import PGPushCore
import PGPushTestSupport
import PushCrypto
import PushTransport

/// A lock in a class, so handlers, tasks and tests can share state.
final class Guarded<Value: Sendable>: Sendable {
    private let mutex: Locked<Value>
    init(_ value: Value) { mutex = Locked(value) }
    @discardableResult
    func withLock<T: Sendable>(_ body: (inout sending Value) -> sending T) -> T { mutex.withLock(body) }
    var value: Value { mutex.withLock { $0 } }
}

/// A throwaway CA, a server certificate for 127.0.0.1 and the CA as a file (PGPUSH_CA_FILE).
struct ClientTestPKI: Sendable {
    let authority: SelfSignedAuthority
    let server: IssuedCertificate
    let caFile: String
    let scratch: ScratchDirectory

    init() throws {
        scratch = try ScratchDirectory()
        authority = try SelfSignedAuthority.generate(commonName: "pgpush client test CA")
        server = try authority.issueServerCertificate()
        caFile = try scratch.write(Array(authority.certificatePEM.utf8), to: "ca.pem")
    }
}

/// One request as the fake APNs saw it.
struct Arrival: Sendable {
    let connectionID: Int
    let streamID: Int32
    let at: ContinuousClock.Instant
    let path: String
    let headers: [HTTP2TLS.HeaderField]
    let peerCertificateSubject: String?

    var authorization: String? { headers.value(of: "authorization") }
}

/// What the fake APNs does with a request: answer it (now or later), refuse it, or ignore it.
typealias FakeAPNsBehaviour = @Sendable (_ request: ServerRequest, _ responder: FakeResponder, _ arrivalIndex: Int) -> Void

/// An HTTP/2 server that answers like APNs (200 with `apns-id` and `apns-unique-id`, or an
/// error JSON) and records every arrival with its time.
final class FakeAPNs: HTTP2ServerHandler {
    /// The `apns-unique-id` the fake gives: a UUID whose first group is fixed and whose last
    /// says which connection and stream answered.
    static let uniqueIDPrefix = "0a0a0a0a-"
    static func uniqueID(connection: Int, stream: Int32) -> String {
        uniqueIDPrefix + "0000-4000-8000-" + String(format: "%06x%06x", connection & 0xFFFFFF, Int(stream) & 0xFFFFFF)
    }

    let arrivals = Guarded<[Arrival]>([])
    let openedConnections = Guarded<[ServerConnectionInfo]>([])
    /// Connection id and stream id of answered requests, in the order answered.
    let answered = Guarded<[FakeResponder.Answer]>([])
    /// The server this fake runs in while it runs, for behaviours that act on a connection.
    let server: Guarded<HTTP2Server?>
    private let behaviour: FakeAPNsBehaviour

    init(server: Guarded<HTTP2Server?> = Guarded(nil),
         behaviour: @escaping FakeAPNsBehaviour = { request, responder, _ in FakeAPNs.accept(request, responder) }) {
        self.server = server
        self.behaviour = behaviour
    }

    func handle(_ request: ServerRequest, responder: ServerResponder) {
        let arrival = Arrival(connectionID: request.connectionID, streamID: request.streamID, at: .now, path: request.path,
                              headers: request.headers, peerCertificateSubject: request.peerCertificateSubject)
        let index = arrivals.withLock { arrivals -> Int in
            arrivals.append(arrival)
            return arrivals.count - 1
        }
        behaviour(request, FakeResponder(responder: responder, log: answered), index)
    }

    func connectionOpened(_ connection: ServerConnectionInfo) {
        openedConnections.withLock { $0.append(connection) }
    }

    static func accept(_ request: ServerRequest, _ responder: FakeResponder) {
        var headers = [HTTP2TLS.HeaderField("apns-unique-id", FakeAPNs.uniqueID(connection: request.connectionID, stream: request.streamID))]
        if let id = request.headers.value(of: "apns-id") { headers.append(HTTP2TLS.HeaderField("apns-id", id)) }
        responder.respond(status: 200, headers: headers)
    }

    static func reject(_ request: ServerRequest, _ responder: FakeResponder, status: Int, reason: String, timestamp: Date? = nil) {
        var headers: [HTTP2TLS.HeaderField] = []
        if let id = request.headers.value(of: "apns-id") { headers.append(HTTP2TLS.HeaderField("apns-id", id)) }
        responder.respond(status: status, headers: headers, body: APNsErrorBody(reason: reason, timestamp: timestamp).encoded())
    }

    /// A fake that answers every request with the error.
    static func rejectingAll(status: Int, reason: String, timestamp: Date? = nil) -> FakeAPNs {
        FakeAPNs { request, responder, _ in reject(request, responder, status: status, reason: reason, timestamp: timestamp) }
    }

    /// A fake that, instead of answering the first request, does `act` to the server (a
    /// GOAWAY, a dropped connection), and answers every later one with 200.
    static func actingOnFirst(_ act: @escaping @Sendable (HTTP2Server, ServerRequest) -> Void) -> FakeAPNs {
        let server = Guarded<HTTP2Server?>(nil)
        return FakeAPNs(server: server) { request, responder, index in
            if index == 0 { server.value.map { act($0, request) } } else { accept(request, responder) }
        }
    }

    /// A fake that answers the first request with the error and every later one with 200.
    static func rejectingFirst(status: Int, reason: String) -> FakeAPNs {
        FakeAPNs { request, responder, index in
            if index == 0 { reject(request, responder, status: status, reason: reason) } else { accept(request, responder) }
        }
    }
}

/// The server's responder, noting each answer just before posting it to the server's
/// I/O thread (so before the client can see it): tests order arrivals against answers.
struct FakeResponder: Sendable {
    let responder: ServerResponder
    let log: Guarded<[Answer]>

    struct Answer: Sendable {
        let connectionID: Int
        let streamID: Int32
        let at: ContinuousClock.Instant
    }

    var connectionID: Int { responder.connectionID }
    var streamID: Int32 { responder.streamID }

    func respond(status: Int, headers: [HTTP2TLS.HeaderField] = [], body: [UInt8] = []) {
        log.withLock { $0.append(Answer(connectionID: responder.connectionID, streamID: responder.streamID, at: .now)) }
        responder.respond(status: status, headers: headers, body: body)
    }

    func refuse() { responder.refuse() }
}

/// A running fake APNs over real TLS with a throwaway CA of its own (or `pki`, to restart on
/// the same one), and clients configured for it; `stop()` frees the port for a restart.
final class FakeAPNsServer: Sendable {
    let pki: ClientTestPKI
    let handler: FakeAPNs
    let server: HTTP2Server
    var port: Int { server.port }

    init(pki: ClientTestPKI? = nil, port: Int = 0, handler: FakeAPNs = FakeAPNs(), maxConcurrentStreams: Int = 100,
         requireClientCertificate: Bool = false) throws {
        let pki = try pki ?? ClientTestPKI()
        self.pki = pki
        var configuration = HTTP2ServerConfiguration(certificateChain: .text(pki.server.certificatePEM),
                                                     privateKey: .text(pki.server.privateKeyPEM))
        configuration.port = port
        configuration.maxConcurrentStreams = maxConcurrentStreams
        if requireClientCertificate { configuration.clientCertificates = .require(trustedCAFile: pki.caFile) }
        self.handler = handler
        server = try HTTP2Server(configuration: configuration, handler: handler, threadName: "fake-apns")
        handler.server.withLock { $0 = server }
    }

    func stop() {
        handler.server.withLock { $0 = nil }
        server.shutdown()
    }

    /// A client of this server (`ClientTestValues.client`); provider tokens from a fresh key
    /// unless `authentication` says otherwise.
    func client(authentication: APNsAuthentication? = nil, connections: Int = 1, rate: Int? = nil,
                requestTimeout: Duration = .seconds(10)) throws -> APNsClient {
        try ClientTestValues.client(port: port, pki: pki, authentication: authentication ?? .token(ClientTestValues.tokenCache()),
                                    connections: connections, rate: rate, requestTimeout: requestTimeout)
    }
}

enum ClientTestValues {
    static let bundleID = "com.example.pgpush"
    static let deviceToken = String(repeating: "ab", count: 32)

    static func request(_ id: Int64, authentication: AuthenticationMethod = .token) throws -> APNsRequest {
        let notification = PushNotification(id: id, deviceToken: deviceToken, payload: Array(#"{"aps":{"alert":"hello"}}"#.utf8))
        return try notification.validated(bundleID: bundleID, authentication: authentication)
    }

    static func tokenCache(key: ES256PrivateKey? = nil) throws -> ProviderTokenCache {
        let identity = try ProviderTokenIdentity(keyID: "KEY1234567", teamID: "TEAM123456")
        return ProviderTokenCache(signer: ProviderTokenSigner(key: try key ?? ES256PrivateKey.generate(), identity: identity))
    }

    /// Sends `count` requests at once and returns them with their results, in request order.
    static func sendAll(_ client: APNsClient, count: Int, authentication: AuthenticationMethod = .token) async throws
        -> [(request: APNsRequest, result: Delivery)] {
        let requests = try (0..<count).map { try request(Int64($0), authentication: authentication) }
        let results = await withTaskGroup(of: (Int, Delivery).self) { group in
            for (index, request) in requests.enumerated() {
                group.addTask { (index, await client.send(request)) }
            }
            return await group.reduce(into: [Int: Delivery]()) { $0[$1.0] = $1.1 }
        }
        return requests.indices.compactMap { index in results[index].map { (requests[index], $0) } }
    }

    /// A client of the fake server with quick reconnects, so tests do not wait on backoff.
    static func client(port: Int, pki: ClientTestPKI, authentication: APNsAuthentication, connections: Int = 1,
                       rate: Int? = nil, requestTimeout: Duration = .seconds(10)) throws -> APNsClient {
        var configuration = APNsClientConfiguration(appName: "test", bundleID: bundleID,
                                                    endpoint: try APNsEndpoint(baseURL: "https://127.0.0.1:\(port)"),
                                                    authentication: authentication)
        configuration.extraCAFile = pki.caFile
        configuration.connection.connections = connections
        configuration.connection.ratePerConnection = rate
        configuration.connection.requestTimeout = requestTimeout
        configuration.connection.connectTimeout = .seconds(5)
        configuration.connection.reconnectBackoff = ReconnectBackoff(initial: .milliseconds(20), maximum: .milliseconds(200))
        return try APNsClient(configuration: configuration)
    }
}
