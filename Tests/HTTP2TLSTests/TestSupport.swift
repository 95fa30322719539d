import Foundation
import Glibc
import HTTP2TLS
import Locking
import PGPushTestSupport

/// A handler made of closures, for tests.
final class ClosureHandler: HTTP2ServerHandler {
    let onRequest: @Sendable (ServerRequest, ServerResponder) -> Void
    let onOpen: @Sendable (ServerConnectionInfo) -> Void
    let onClose: @Sendable (Int) -> Void

    init(onOpen: @escaping @Sendable (ServerConnectionInfo) -> Void = { _ in },
         onClose: @escaping @Sendable (Int) -> Void = { _ in },
         onRequest: @escaping @Sendable (ServerRequest, ServerResponder) -> Void) {
        self.onRequest = onRequest
        self.onOpen = onOpen
        self.onClose = onClose
    }

    func handle(_ request: ServerRequest, responder: ServerResponder) { onRequest(request, responder) }
    func connectionOpened(_ connection: ServerConnectionInfo) { onOpen(connection) }
    func connectionClosed(_ connectionID: Int) { onClose(connectionID) }
}

/// Answers 200 with the request body, echoing `apns-id` and adding `apns-unique-id`.
let echoHandler = ClosureHandler { request, responder in
    var headers = [HeaderField("apns-unique-id", "unique-\(request.streamID)")]
    if let id = request.headers.value(of: "apns-id") { headers.append(HeaderField("apns-id", id)) }
    responder.respond(status: 200, headers: headers, body: request.body)
}

func makeServer(_ handler: any HTTP2ServerHandler, maxConcurrentStreams: Int = 100,
                certificate: String? = nil, key: String? = nil,
                clientCertificates: ClientCertificatePolicy = .none) throws -> HTTP2Server {
    let certificates = try TestCertificates.get()
    var configuration = HTTP2ServerConfiguration(certificateChain: .file(certificate ?? certificates.serverCertificate),
                                                 privateKey: .file(key ?? certificates.serverKey))
    configuration.maxConcurrentStreams = maxConcurrentStreams
    configuration.clientCertificates = clientCertificates
    return try HTTP2Server(configuration: configuration, handler: handler)
}

/// A request deadline of ten minutes unless a test sets its own: a test's task may resume
/// many seconds after the event it waited for (ThreadSanitizer beside the whole suite), and
/// a request it holds on purpose must end by what the test does, not by the default 10 s.
func clientConfiguration(trusting caFile: String? = nil) throws -> HTTP2ClientConfiguration {
    let certificates = try TestCertificates.get()
    var configuration = HTTP2ClientConfiguration(tls: try ClientTLSContext(extraCAFile: caFile ?? certificates.caFile))
    configuration.requestTimeout = .seconds(600)
    return configuration
}

func request(_ index: Int) -> HTTP2Request {
    HTTP2Request(path: "/3/device/\(index)", headers: [HeaderField("apns-id", "id-\(index)")], body: Array("body-\(index)".utf8))
}

/// Waits for the connection's `.closed` event.
func closeReason(of connection: HTTP2ClientConnection) async -> CloseReason? {
    for await event in connection.events {
        if case .closed(let reason) = event { return reason }
    }
    return nil
}

/// Lets a test hand the server to its own handler after creating both.
final class ServerReference: Sendable {
    private let server = Locked<HTTP2Server?>(nil)
    func set(_ value: HTTP2Server?) { server.withLock { $0 = value } }
    var value: HTTP2Server? { server.withLock { $0 } }
}


extension Locked where Value: Sendable {
    /// A copy of the value, for assertions.
    var value: Value { withLock { $0 } }
}

/// `send` as a Result, for collecting outcomes from task groups.
func outcome(of connection: HTTP2ClientConnection, _ request: HTTP2Request) async -> Result<HTTP2Response, RequestFailure> {
    do throws(RequestFailure) {
        return .success(try await connection.send(request))
    } catch {
        return .failure(error)
    }
}

func failure(of connection: HTTP2ClientConnection, _ request: HTTP2Request) async -> RequestFailure? {
    if case .failure(let failure) = await outcome(of: connection, request) { return failure }
    return nil
}

/// Bytes the kernel holds unread for the established IPv4 socket bound to `port` on this
/// side (the server's end of a test connection), from /proc/net/tcp; 0 when there is none.
func unreadBytes(onLocalPort port: Int) -> Int {
    guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return 0 }
    let localSuffix = ":" + String(format: "%04X", port)
    for line in table.split(separator: "\n").dropFirst() {
        let fields = line.split(separator: " ")
        // local_address rem_address st tx_queue:rx_queue; st 01 is ESTABLISHED.
        guard fields.count > 4, fields[1].hasSuffix(localSuffix), fields[3] == "01",
              let queues = fields[4].split(separator: ":").last, let unread = Int(queues, radix: 16) else { continue }
        if unread > 0 { return unread }
    }
    return 0
}
