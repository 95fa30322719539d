/// A connection accepted by an `HTTP2Server`, after its TLS handshake.
package struct ServerConnectionInfo: Sendable {
    package var id: Int
    package var peerAddress: String
    /// RFC 2253 subject of the client certificate, when one was presented.
    package var peerCertificateSubject: String?
    /// DER of the client certificate, for handlers that inspect extensions.
    package var peerCertificateDER: [UInt8]?
}

/// A complete request (headers and body) received by an `HTTP2Server`.
package struct ServerRequest: Sendable {
    package var connectionID: Int
    package var streamID: Int32
    package var method: String
    package var path: String
    package var authority: String?
    /// Regular (non-pseudo) header fields; `neverIndex` is set for fields the client sent
    /// with the HPACK never-indexed representation.
    package var headers: [HeaderField]
    package var body: [UInt8]
    package var peerCertificateSubject: String?
    /// When the kernel received the bytes that completed the request (CLOCK_REALTIME
    /// nanoseconds), before any wait for the server's thread; nil if it gave no time.
    package var arrivalNanoseconds: UInt64?

    package init(connectionID: Int, streamID: Int32, method: String, path: String, authority: String?,
                headers: [HeaderField], body: [UInt8], peerCertificateSubject: String?, arrivalNanoseconds: UInt64? = nil) {
        self.connectionID = connectionID
        self.streamID = streamID
        self.method = method
        self.path = path
        self.authority = authority
        self.headers = headers
        self.body = body
        self.peerCertificateSubject = peerCertificateSubject
        self.arrivalNanoseconds = arrivalNanoseconds
    }
}

/// Serves requests. Every method runs on the server's I/O thread and must return quickly;
/// answers may be given later, from any thread, through the responder.
package protocol HTTP2ServerHandler: Sendable {
    func handle(_ request: ServerRequest, responder: ServerResponder)
    func connectionOpened(_ connection: ServerConnectionInfo)
    func connectionClosed(_ connectionID: Int)
}

extension HTTP2ServerHandler {
    package func connectionOpened(_ connection: ServerConnectionInfo) {}
    package func connectionClosed(_ connectionID: Int) {}
}

/// Answers one request stream; usable from any thread. Only the first answer counts.
package struct ServerResponder: Sendable {
    package let connectionID: Int
    package let streamID: Int32
    let loop: EventLoop<ServerCommand>

    package func respond(status: Int, headers: [HeaderField] = [], body: [UInt8] = []) {
        loop.post(.respond(connectionID: connectionID, streamID: streamID,
                           ServerResponse(status: status, headers: headers, body: body)))
    }

    /// RST_STREAM REFUSED_STREAM: tells the client the request was not processed.
    package func refuse() {
        reset(errorCode: 0x7)
    }

    package func reset(errorCode: UInt32) {
        loop.post(.resetStream(connectionID: connectionID, streamID: streamID, errorCode: errorCode))
    }
}

struct ServerResponse: Sendable {
    var status: Int
    var headers: [HeaderField]
    var body: [UInt8]
}

enum ServerCommand: Sendable {
    case respond(connectionID: Int, streamID: Int32, ServerResponse)
    case resetStream(connectionID: Int, streamID: Int32, errorCode: UInt32)
    case goAway(connectionID: Int, lastStreamID: Int32?, errorCode: UInt32, debugData: [UInt8])
    case goAwayAll(errorCode: UInt32, debugData: [UInt8])
    case setMaxConcurrentStreams(connectionID: Int, Int)
    case drop(connectionID: Int)
}
