import CShims
import Foundation
import Synchronization

extension MetricsServer {
    /// The stop flag and the eventfd that wakes the loop's `poll`, shared by the server and its
    /// thread: the descriptor is closed only when both are done with it, so a late `stop()`
    /// never writes to a number the process has since reused.
    final class Control: Sendable {
        private let stopped = Atomic<Bool>(false)
        /// Connections the loop holds, and connections it has accepted since it started, both
        /// published at the end of each round, `held` first (for tests and diagnosis).
        let held = Atomic<Int>(0)
        let accepted = Atomic<Int>(0)
        let wakeUp: Int32

        init(wakeUp: Int32) { self.wakeUp = wakeUp }

        deinit { close(wakeUp) }

        var isStopped: Bool { stopped.load(ordering: .acquiring) }

        func stop() {
            guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
            var one: UInt64 = 1
            _ = write(wakeUp, &one, MemoryLayout<UInt64>.size)
        }
    }

    /// One client: reading its head, writing its response, or lingering after it.
    struct Connection {
        enum Phase { case reading, writing, lingering }

        let descriptor: Int32
        var phase = Phase.reading
        /// When the current phase must be over: the head read, the response written, the
        /// linger ended.
        var deadline: ContinuousClock.Instant
        var request: [UInt8] = []
        var response: [UInt8] = []
        var written = 0
        var closed = false
    }

    /// The poll loop on the server's thread; owns the listener and the connections.
    final class Loop {
        let listener: Int32
        let control: Control
        let limits: Limits
        let route: @Sendable (String) -> Response
        var connections: [Connection] = []
        var acceptedSoFar = 0
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)

        init(listener: Int32, control: Control, limits: Limits, route: @escaping @Sendable (String) -> Response) {
            self.listener = listener
            self.control = control
            self.limits = limits
            self.route = route
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
                    let events = connection.phase == .writing ? POLLOUT : POLLIN
                    entries.append(pollfd(fd: connection.descriptor, events: Int16(events), revents: 0))
                }
                let ready = poll(&entries, nfds_t(entries.count), timeoutUntilNearestDeadline())
                if control.isStopped { return }
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
            guard let nearest = connections.map(\.deadline).min() else { return -1 }
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
                        ?? connections.firstIndex { $0.phase == .reading } ?? connections.startIndex
                    close(connections[victim].descriptor)
                    connections.remove(at: victim)
                }
                connections.append(Connection(descriptor: descriptor, deadline: .now + limits.requestDeadline))
                acceptedSoFar += 1
            }
        }

        func service(_ connection: inout Connection, revents: Int16) {
            switch connection.phase {
            case .reading:
                read(&connection)
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
            if let end = Self.endOfHead(connection.request, from: searchFrom), end <= limits.maximumRequestSize {
                respond(&connection, with: answer(connection.request[..<end]))
            } else if connection.request.count >= limits.maximumRequestSize {
                respond(&connection, with: Response(status: 431, body: "request head larger than \(limits.maximumRequestSize) bytes\n"))
            }
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

        func answer(_ head: ArraySlice<UInt8>) -> Response {
            let firstLine = String(decoding: head.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
            let parts = firstLine.split(separator: " ")
            guard parts.count >= 2 else { return Response(status: 400, body: "not an HTTP request\n") }
            guard parts[0] == "GET" else { return Response(status: 405, body: "only GET\n") }
            return route(String(parts[1].split(separator: "?").first ?? ""))
        }

        func respond(_ connection: inout Connection, with response: Response) {
            connection.request = []
            connection.response = Self.encode(response)
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
            connection.deadline = .now + MetricsServer.lingerAfterResponse
        }

        /// Heads not finished in time are answered 408; responses not written in time and
        /// lingers that ended are dropped.
        func expireDeadlines() {
            let now = ContinuousClock.now
            for index in connections.indices where !connections[index].closed && connections[index].deadline <= now {
                switch connections[index].phase {
                case .reading:
                    respond(&connections[index], with: Response(status: 408, body: "request head not received in time\n"))
                    // A 408 that does not fit at once is not worth a write deadline of its own.
                    if connections[index].phase == .writing { connections[index].closed = true }
                case .writing, .lingering:
                    connections[index].closed = true
                }
            }
        }

        static func encode(_ response: Response) -> [UInt8] {
            let reasons = [200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
                           431: "Request Header Fields Too Large", 503: "Service Unavailable"]
            let body = Array(response.body.utf8)
            let head = "HTTP/1.1 \(response.status) \(reasons[response.status] ?? "Status")\r\nContent-Type: \(response.contentType)\r\n"
                + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
            return Array(head.utf8) + body
        }
    }
}
