import CNGHTTP2
import CShims
import Glibc

/// The server side of an I/O thread: the listening socket and every accepted connection.
final class ServerDriver: EventLoopDriver {
    private let listener: Int32
    private var listening = true
    private let environment: ServerEnvironment?
    private var connections: [Int: ServerConnection] = [:]
    private var polled: [ServerConnection] = []
    private var nextID = 1
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)

    init(listener: Int32, configuration: HTTP2ServerConfiguration, tls: ServerTLSContext, handler: any HTTP2ServerHandler,
         loop: EventLoop<ServerCommand>, counters: ServerCounters, liveObjects: LiveObjectCounter) {
        self.listener = listener
        environment = ServerSessionCallbacks.make().map {
            ServerEnvironment(configuration: configuration, tls: tls, handler: handler, loop: loop, counters: counters,
                              liveObjects: liveObjects, callbacks: $0)
        }
    }

    deinit {
        readBuffer.deallocate()
        if let environment { nghttp2_session_callbacks_del(environment.callbacks) }
    }

    func execute(_ command: ServerCommand) {
        switch command {
        case .respond(let id, let streamID, let response): connections[id]?.respond(streamID: streamID, response)
        case .resetStream(let id, let streamID, let code): connections[id]?.reset(streamID: streamID, errorCode: code)
        case .goAway(let id, let last, let code, let debug): connections[id]?.goAway(lastStreamID: last, errorCode: code, debugData: debug)
        case .goAwayAll(let code, let debug):
            for connection in connections.values { connection.goAway(lastStreamID: nil, errorCode: code, debugData: debug) }
        case .setMaxConcurrentStreams(let id, let value): connections[id]?.setMaxConcurrentStreams(value)
        case .drop(let id):
            connections[id]?.close()
            connections[id] = nil
        }
    }

    func flush() {
        for (id, connection) in connections {
            connection.transmit()
            if connection.isClosed { connections[id] = nil }
        }
    }

    func registerInterest(_ descriptors: inout [pollfd]) -> UInt64? {
        if listening { descriptors.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0)) }
        polled.removeAll(keepingCapacity: true)
        var earliest: UInt64?
        for connection in connections.values {
            descriptors.append(pollfd(fd: connection.tls.descriptor, events: connection.tls.pollEvents, revents: 0))
            polled.append(connection)
            if let timer = connection.nextTimer { earliest = min(earliest ?? .max, timer) }
        }
        return earliest
    }

    func handleEvents(_ descriptors: [pollfd], firstIndex: Int) {
        var index = firstIndex
        if listening {
            if descriptors[index].revents != 0 { acceptAll() }
            index += 1
        }
        for connection in polled {
            let events = descriptors[index].revents
            index += 1
            if events != 0 { connection.handle(events: events, readBuffer: readBuffer) }
            if connection.isClosed { connections[connection.id] = nil }
        }
        polled.removeAll(keepingCapacity: true)
    }

    func handleTimers(now: UInt64) {
        for (id, connection) in connections {
            connection.handleTimers(now: now)
            if connection.isClosed { connections[id] = nil }
        }
    }

    func shutDown() {
        for connection in connections.values { connection.close() }
        connections.removeAll()
        polled.removeAll()
        if listening {
            listening = false
            close(listener)
            environment?.liveObjects.sockets.subtract(1, ordering: .relaxed)
        }
    }

    private func acceptAll() {
        guard let environment else { return }
        while true {
            let fd = cshims_accept4_nonblocking(listener)
            if fd < 0 { return }  // EAGAIN, or a transient error such as EMFILE: retried on the next poll.
            environment.liveObjects.sockets.add(1, ordering: .relaxed)
            Socket.setNoDelay(fd)
            guard let tls = TLSStream(descriptor: fd, context: environment.tls.context, isServer: true, timesReads: true,
                                            counter: environment.liveObjects) else {
                close(fd)
                environment.liveObjects.sockets.subtract(1, ordering: .relaxed)
                continue
            }
            let id = nextID
            nextID += 1
            environment.counters.connectionsAccepted.add(1, ordering: .relaxed)
            let connection = ServerConnection(id: id, tls: tls, environment: environment)
            connections[id] = connection
            connection.handle(events: Int16(POLLIN), readBuffer: readBuffer)
            if connection.isClosed { connections[id] = nil }
        }
    }
}
