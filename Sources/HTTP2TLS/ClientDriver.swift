import CNGHTTP2
import Glibc

/// The client side of the I/O thread: all client connections of one `HTTP2Client`.
final class ClientDriver: EventLoopDriver {
    private var connections: [Int: ClientConnectionEngine] = [:]
    /// Why connections whose handles still exist were closed, for requests that arrive later.
    private var closedReasons: [Int: CloseReason] = [:]
    private var polled: [ClientConnectionEngine] = []
    private let callbacks: OpaquePointer?
    private let counter: LiveObjectCounter
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)

    init(counter: LiveObjectCounter) {
        self.counter = counter
        callbacks = ClientSessionCallbacks.make()
    }

    deinit {
        readBuffer.deallocate()
        if let callbacks { nghttp2_session_callbacks_del(callbacks) }
    }

    func execute(_ command: ClientCommand) {
        switch command {
        case .open(let setup):
            guard let callbacks else {
                setup.connected.resume(returning: .failure(.connectFailed("nghttp2 callbacks unavailable")))
                return
            }
            let connection = ClientConnectionEngine(setup: setup, callbacks: callbacks, counter: counter)
            if !connection.isClosed { connections[setup.id] = connection }
        case .send(let id, let pending):
            if let connection = connections[id] {
                connection.enqueue(pending)
                removeIfClosed(id)
            } else {
                pending.resolve(.failure(RequestFailure(.notProcessed, .connectionClosed(closedReasons[id] ?? .closedLocally))))
            }
        case .cancel(let id, let token):
            connections[id]?.cancel(token: token)
        case .close(let id, let graceful):
            connections[id]?.requestClose(graceful: graceful)
            removeIfClosed(id)
        case .release(let id):
            connections[id]?.requestClose(graceful: false)
            removeIfClosed(id)
            closedReasons[id] = nil
        }
    }

    func flush() {
        for (id, connection) in connections {
            connection.transmit()
            if connection.isClosed { removeIfClosed(id) }
        }
    }

    func registerInterest(_ descriptors: inout [pollfd]) -> UInt64? {
        polled.removeAll(keepingCapacity: true)
        var earliest: UInt64?
        for connection in connections.values {
            let events = connection.pollEvents
            if events != 0 {
                descriptors.append(pollfd(fd: connection.pollDescriptor, events: events, revents: 0))
                polled.append(connection)
            }
            if let timer = connection.nextTimer { earliest = min(earliest ?? .max, timer) }
        }
        return earliest
    }

    func handleEvents(_ descriptors: [pollfd], firstIndex: Int) {
        for (offset, connection) in polled.enumerated() {
            let events = descriptors[firstIndex + offset].revents
            if events != 0 { connection.handle(events: events, readBuffer: readBuffer) }
            if connection.isClosed { removeIfClosed(connection.id) }
        }
        polled.removeAll(keepingCapacity: true)
    }

    func handleTimers(now: UInt64) {
        for (id, connection) in connections {
            connection.handleTimers(now: now)
            if connection.isClosed { removeIfClosed(id) }
        }
    }

    func shutDown() {
        for connection in connections.values { connection.close(.closedLocally) }
        connections.removeAll()
        polled.removeAll()
    }

    private func removeIfClosed(_ id: Int) {
        guard let connection = connections[id], connection.isClosed else { return }
        connections[id] = nil
        closedReasons[id] = connection.closeReason
    }
}
