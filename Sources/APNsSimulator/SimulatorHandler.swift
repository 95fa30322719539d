import APNsCore
import Dispatch
import Foundation
import HTTP2TLS
import Locking
import PGPushCore

/// The glue between `HTTP2Server` and `SimulatorState`: runs on the server's I/O
/// thread, decides under a lock, then answers, refuses, drops or sends GOAWAY.
final class SimulatorHandler: HTTP2ServerHandler {
    private let state: Locked<SimulatorState>
    /// Set right after the server starts; requests cannot arrive before a client knows the port.
    private let server = Locked<HTTP2Server?>(nil)
    private let log: RequestLog?
    private let clock: @Sendable () -> Date
    private let authenticatedStreamLimit: Int

    init(configuration: SimulatorConfiguration, log: RequestLog?) {
        state = Locked(SimulatorState(configuration: configuration))
        self.log = log
        clock = configuration.clock
        authenticatedStreamLimit = configuration.maxConcurrentStreams
    }

    func attach(_ server: HTTP2Server?) { self.server.withLock { $0 = server } }

    var report: SimulatorReport { state.withLock { $0.report } }

    func connectionOpened(_ connection: ServerConnectionInfo) {
        state.withLock { $0.opened(connection) }
    }

    func connectionClosed(_ connectionID: Int) {
        state.withLock { $0.closed(connectionID) }
    }

    func handle(_ request: ServerRequest, responder: ServerResponder) {
        let now = clock()
        let tick = DispatchTime.now().uptimeNanoseconds
        let decision = state.withLock { $0.decide(request, now: now, tick: tick) }
        if let entry = decision.logEntry { log?.append(entry) }
        let server = self.server.withLock { $0 }
        if let goAway = decision.goAway {
            server?.sendGoAway(connectionID: request.connectionID, lastStreamID: goAway.lastStreamID, errorCode: 0,
                               debugData: APNsErrorBody(reason: goAway.reason, timestamp: nil).encoded())
        }
        if decision.raiseStreamLimit {
            server?.setMaxConcurrentStreams(authenticatedStreamLimit, connectionID: request.connectionID)
        }
        switch decision.step {
        case .refuse:
            responder.refuse()
        case .drop:
            server?.dropConnection(request.connectionID)
        case .leaveToGoAway:
            break
        case .respond(let status, let headers, let body, let delay):
            if delay <= .zero {
                responder.respond(status: status, headers: headers, body: body)
            } else {
                let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
                    responder.respond(status: status, headers: headers, body: body)
                }
            }
        }
    }

    func flushLog() { log?.flush() }
    func closeLog() { log?.close() }
}
