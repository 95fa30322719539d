/// A TLS + HTTP/2 server on its own I/O thread (the APNs simulator's transport).
package final class HTTP2Server: Sendable {
    /// The bound port (the ephemeral one when the configuration said 0).
    package let port: Int
    private let loop: EventLoop<ServerCommand>
    private let counters = ServerCounters()
    private let liveObjectCounter = LiveObjectCounter()

    package init(configuration: HTTP2ServerConfiguration, handler: any HTTP2ServerHandler, threadName: String = "h2-server") throws(ServerError) {
        let tls: ServerTLSContext
        do {
            tls = try ServerTLSContext(certificate: configuration.certificateChain, privateKey: configuration.privateKey,
                                       clientCertificates: configuration.clientCertificates, protocols: configuration.protocols)
        } catch { throw .tls(error) }
        let (listener, port) = try Socket.listen(host: configuration.host, port: configuration.port)
        self.port = port
        let counters = self.counters
        let liveObjects = liveObjectCounter
        liveObjects.sockets.add(1, ordering: .relaxed)
        do {
            loop = try EventLoop(name: threadName, counter: liveObjects) { loop in
                ServerDriver(listener: listener, configuration: configuration, tls: tls, handler: handler, loop: loop,
                             counters: counters, liveObjects: liveObjects)
            }
        } catch {
            liveObjects.sockets.subtract(1, ordering: .relaxed)
            throw .cannotStartThread(error.description)
        }
    }

    deinit { loop.stop() }

    package var statistics: ServerStatistics { counters.snapshot }
    package var liveObjects: LiveObjectCounts { liveObjectCounter.snapshot }

    /// Sends GOAWAY; streams above `lastStreamID` (default: the last one the server saw) will
    /// not be answered. The connection closes once its remaining streams finish.
    package func sendGoAway(connectionID: Int, lastStreamID: Int32? = nil, errorCode: UInt32 = 0, debugData: [UInt8] = []) {
        loop.post(.goAway(connectionID: connectionID, lastStreamID: lastStreamID, errorCode: errorCode, debugData: debugData))
    }

    /// GOAWAY on every open connection, each with the last stream it has seen.
    package func sendGoAwayToAll(errorCode: UInt32 = 0, debugData: [UInt8] = []) {
        loop.post(.goAwayAll(errorCode: errorCode, debugData: debugData))
    }

    /// Announces a new SETTINGS_MAX_CONCURRENT_STREAMS on one connection.
    package func setMaxConcurrentStreams(_ value: Int, connectionID: Int) {
        loop.post(.setMaxConcurrentStreams(connectionID: connectionID, value))
    }

    /// RST_STREAM REFUSED_STREAM on one stream.
    package func refuseStream(connectionID: Int, streamID: Int32) {
        loop.post(.resetStream(connectionID: connectionID, streamID: streamID, errorCode: 0x7))
    }

    /// Closes the TCP connection without GOAWAY.
    package func dropConnection(_ connectionID: Int) {
        loop.post(.drop(connectionID: connectionID))
    }

    /// Drops every connection, closes the listener and stops the I/O thread.
    package func shutdown() { loop.stop() }
}

/// Why an `HTTP2Server` could not start.
package enum ServerError: Error, Sendable, CustomStringConvertible {
    case cannotListen(String)
    case tls(TLSConfigurationError)
    case cannotStartThread(String)

    package var description: String {
        switch self {
        case .cannotListen(let text): return "cannot listen: \(text)"
        case .tls(let error): return error.description
        case .cannotStartThread(let text): return "cannot start I/O thread: \(text)"
        }
    }
}
