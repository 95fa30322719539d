import CShims
import Foundation
import Locking
import Synchronization

extension HTTPServer {
    /// The stop flag and the eventfd that wakes the loop's `poll`, shared by the server and its
    /// thread: the descriptor is closed only when both are done with it, so a late `stop()`
    /// never writes to a number the process has since reused.
    ///
    /// It also carries answers from the route's queue back to the loop: the queue puts a
    /// finished response in `answered` and rings the eventfd.
    final class Control: Sendable {
        private let stopped = Atomic<Bool>(false)
        let route: @Sendable (HTTPRequest) -> HTTPResponse
        /// Concurrent: a slow answer (a page waiting for the database) holds up no other
        /// request; the cap on connections bounds how many run at once.
        let routeQueue = DispatchQueue(label: "pgpush-http-route", attributes: .concurrent)
        private let answered = Locked<[(connection: Int, response: HTTPResponse)]>([])
        /// Connections the loop holds, and connections it has accepted since it started, both
        /// published at the end of each round, `held` first (for tests and diagnosis).
        let held = Atomic<Int>(0)
        let accepted = Atomic<Int>(0)
        let wakeUp: Int32

        init(wakeUp: Int32, route: @escaping @Sendable (HTTPRequest) -> HTTPResponse) {
            self.wakeUp = wakeUp
            self.route = route
        }

        /// Runs the route off the loop's thread; its answer comes back through `takeAnswers`.
        func answer(_ request: HTTPRequest, for connection: Int) {
            routeQueue.async { [self] in
                let response = route(request)
                answered.withLock { $0.append((connection, response)) }
                ring()
            }
        }

        func takeAnswers() -> [(connection: Int, response: HTTPResponse)] {
            answered.withLock { answers in
                defer { answers = [] }
                return answers
            }
        }

        private func ring() {
            var one: UInt64 = 1
            _ = write(wakeUp, &one, MemoryLayout<UInt64>.size)
        }

        deinit { close(wakeUp) }

        var isStopped: Bool { stopped.load(ordering: .acquiring) }

        func stop() {
            guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
            ring()
        }
    }

    /// One client: reading its request, waiting for the route's answer, writing it, or
    /// lingering after it.
    struct Connection {
        enum Phase { case reading, answering, writing, lingering }

        let id: Int
        let descriptor: Int32
        var phase = Phase.reading
        /// When the current phase must be over: the request read, the response written, the
        /// linger ended. While answering, none: the route's queue answers every request.
        var deadline: ContinuousClock.Instant
        var request: [UInt8] = []
        /// Once the head is read: where it ends in `request`, and the body it announced.
        var head: (end: Int, method: String, target: String, headers: [(name: String, value: String)], contentLength: Int)?
        var response: [UInt8] = []
        var written = 0
        var closed = false
    }

    /// The poll loop on the server's thread; owns the listener and the connections.
    final class Loop {
        let listener: Int32
        let control: Control
        let limits: Limits
        var connections: [Connection] = []
        var acceptedSoFar = 0
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)

        init(listener: Int32, control: Control, limits: Limits) {
            self.listener = listener
            self.control = control
            self.limits = limits
        }

        func run() {
            defer {
                for connection in connections { close(connection.descriptor) }
                close(listener)
                control.held.store(0, ordering: .releasing)
            }
            while !control.isStopped {
                var entries = [pollfd(fd: control.wakeUp, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
                for connection in connections {
                    // A connection waiting for its answer is not polled: what it sends now
                    // is read, and thrown away, once the answer is written.
                    let events: Int32 = switch connection.phase {
                    case .writing: Int32(POLLOUT)
                    case .answering: 0
                    case .reading, .lingering: Int32(POLLIN)
                    }
                    entries.append(pollfd(fd: connection.descriptor, events: Int16(events), revents: 0))
                }
                let ready = poll(&entries, nfds_t(entries.count), timeoutUntilNearestDeadline())
                if control.isStopped { return }
                if entries[0].revents != 0 {
                    var count: UInt64 = 0
                    _ = Glibc.read(control.wakeUp, &count, MemoryLayout<UInt64>.size)
                }
                for (id, response) in control.takeAnswers() {
                    if let index = connections.firstIndex(where: { $0.id == id && $0.phase == .answering }) {
                        respond(&connections[index], with: response)
                    }
                }
                if ready < 0 {
                    // EINTR; anything else (ENOMEM) is retried after a pause rather than ending
                    // the endpoint for the rest of the process's life.
                    if errno != EINTR { usleep(10_000) }
                    continue
                }
                for index in connections.indices where entries[index + 2].revents != 0 {
                    service(&connections[index], revents: entries[index + 2].revents)
                }
                expireDeadlines()
                connections.removeAll { connection in
                    if connection.closed { close(connection.descriptor) }
                    return connection.closed
                }
                if entries[1].revents != 0 { acceptWaiting() }
                control.held.store(connections.count, ordering: .releasing)
                control.accepted.store(acceptedSoFar, ordering: .releasing)
            }
        }

        /// Milliseconds until the nearest deadline, rounded up; -1 (for ever) with no client.
        func timeoutUntilNearestDeadline() -> Int32 {
            guard let nearest = connections.filter({ $0.phase != .answering }).map(\.deadline).min() else { return -1 }
            let left = nearest - ContinuousClock.now
            guard left > .zero else { return 0 }
            let (seconds, attoseconds) = left.components
            return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
        }

        /// Takes every connection the listener holds; past the cap, each new one replaces the
        /// oldest connection in the least useful phase (lingering, then reading, then writing).
        func acceptWaiting() {
            while true {
                let descriptor = cshims_accept4_nonblocking(listener)
                if descriptor < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    // EAGAIN: none left. EMFILE and the like: the connections waiting stay in
                    // the backlog until a descriptor is free; the pause keeps the listener,
                    // still readable, from spinning the loop meanwhile.
                    if errno != EAGAIN && errno != EWOULDBLOCK { usleep(50_000) }
                    return
                }
                if connections.count >= max(1, limits.maximumConnections) {
                    let victim = connections.firstIndex { $0.phase == .lingering }
                        ?? connections.firstIndex { $0.phase == .reading }
                        ?? connections.firstIndex { $0.phase == .writing } ?? connections.startIndex
                    close(connections[victim].descriptor)
                    connections.remove(at: victim)
                }
                acceptedSoFar += 1
                connections.append(Connection(id: acceptedSoFar, descriptor: descriptor, deadline: .now + limits.requestDeadline))
            }
        }

        func service(_ connection: inout Connection, revents: Int16) {
            switch connection.phase {
            case .reading:
                read(&connection)
            case .answering:
                break
            case .writing:
                if revents & Int16(POLLOUT) != 0 { write(&connection) } else { connection.closed = true }
            case .lingering:
                // Throw away what the client still sends; its end of stream ends the connection.
                let count = recv(connection.descriptor, &buffer, buffer.count, 0)
                if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) { connection.closed = true }
            }
        }

        func read(_ connection: inout Connection) {
            let count = recv(connection.descriptor, &buffer, buffer.count, 0)
            if count < 0 {
                if errno != EAGAIN && errno != EINTR { connection.closed = true }
                return
            }
            guard count > 0 else {
                // The client closed before finishing its head: nobody to answer.
                connection.closed = true
                return
            }
            let searchFrom = max(0, connection.request.count - 3)
            connection.request += buffer[0..<count]
            if connection.head == nil {
                guard let end = Self.endOfHead(connection.request, from: searchFrom), end <= limits.maximumRequestSize else {
                    if connection.request.count >= limits.maximumRequestSize {
                        respond(&connection, with: HTTPResponse(status: 431, body: "request head larger than \(limits.maximumRequestSize) bytes\n"))
                    }
                    return
                }
                switch HTTPRequest.parseHead(connection.request[..<end]) {
                case let .refused(status, message):
                    respond(&connection, with: HTTPResponse(status: status, body: message + "\n"))
                    return
                case let .request(method, target, headers, contentLength):
                    guard contentLength <= limits.maximumBodySize else {
                        respond(&connection, with: HTTPResponse(status: 413, body: "request body larger than \(limits.maximumBodySize) bytes\n"))
                        return
                    }
                    connection.head = (end, method, target, headers, contentLength)
                }
            }
            guard let head = connection.head, connection.request.count >= head.end + head.contentLength else { return }
            let body = Array(connection.request[head.end..<(head.end + head.contentLength)])
            connection.request = []
            connection.phase = .answering
            control.answer(HTTPRequest(method: head.method, target: head.target, headers: head.headers, body: body), for: connection.id)
        }

        /// Index just past the blank line that ends a head (CRLF CRLF, or LF LF from a
        /// hand-typed request), searching from `start`.
        static func endOfHead(_ bytes: [UInt8], from start: Int) -> Int? {
            var index = start
            while index < bytes.count {
                if bytes[index] == 10 {
                    if index + 1 < bytes.count, bytes[index + 1] == 10 { return index + 2 }
                    if index + 2 < bytes.count, bytes[index + 1] == 13, bytes[index + 2] == 10 { return index + 3 }
                }
                index += 1
            }
            return nil
        }

        func respond(_ connection: inout Connection, with response: HTTPResponse) {
            connection.request = []
            connection.response = response.encoded
            connection.phase = .writing
            connection.deadline = .now + limits.writeDeadline
            write(&connection)
        }

        func write(_ connection: inout Connection) {
            while connection.written < connection.response.count {
                let count = connection.response[connection.written...].withUnsafeBytes {
                    send(connection.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if count < 0 {
                    if errno == EINTR { continue }
                    if errno != EAGAIN { connection.closed = true }
                    return
                }
                connection.written += count
            }
            // All of it is with the kernel: say so, then read whatever the client still sends
            // until it closes, so the close does not reset the answer away.
            shutdown(connection.descriptor, Int32(SHUT_WR))
            connection.response = []
            connection.phase = .lingering
            connection.deadline = .now + HTTPServer.lingerAfterResponse
        }

        /// Heads not finished in time are answered 408; responses not written in time and
        /// lingers that ended are dropped.
        func expireDeadlines() {
            let now = ContinuousClock.now
            for index in connections.indices where !connections[index].closed && connections[index].deadline <= now {
                switch connections[index].phase {
                case .reading:
                    respond(&connections[index], with: HTTPResponse(status: 408, body: "request not received in time\n"))
                    // A 408 that does not fit at once is not worth a write deadline of its own.
                    if connections[index].phase == .writing { connections[index].closed = true }
                case .writing, .lingering:
                    connections[index].closed = true
                case .answering:
                    break
                }
            }
        }
    }
}
