import CShims
import Foundation
import Synchronization

/// The small HTTP/1.1 server behind the worker's metrics endpoint (`PGPUSH_METRICS_ADDR`)
/// and the status page (`pgpush web`). One request per connection; a head and, when it
/// says `Content-Length`, a body; no chunked requests, no keep-alive.
///
/// One thread serves every client at once with non-blocking sockets and `poll`, so no
/// client can hold it: each has a deadline for its whole request head and another for the
/// whole response, the head has a size cap, and past the cap on connections the oldest
/// connection still sending its head is dropped for a new one. A liveness probe is then
/// answered while slow or silent clients are connected (issue 24: one client sending a
/// byte every 1.5 s once held the endpoint for ever, and 10 of 11 probes timed out).
///
/// `route` runs on a serial queue of its own, never on the poll thread: a page that waits
/// for the database holds its own client only, while the loop goes on reading the others
/// and enforcing their deadlines.
package final class HTTPServer: Sendable {

    /// What one client may take of the endpoint.
    package struct Limits: Sendable {
        /// From accept to the blank line that ends the request head; then 408 and close.
        /// Orchestrators probe with a timeout of a second or more and send the head at once.
        package var requestDeadline: Duration
        /// From the end of the head to the last byte of the response; then the connection is
        /// dropped (a client that never reads a big /metrics body holds a slot no longer).
        package var writeDeadline: Duration
        /// Bytes of request head; past them 431 and close. A GET needs a few hundred.
        package var maximumRequestSize: Int
        /// Bytes of request body (a form); a longer `Content-Length` is answered 413.
        package var maximumBodySize: Int
        /// Connections held at once, answered or not. A scraper and a few probes need a
        /// handful; each holds at most a head and one response.
        package var maximumConnections: Int

        package init(requestDeadline: Duration = .seconds(5), writeDeadline: Duration = .seconds(10),
                    maximumRequestSize: Int = 8192, maximumBodySize: Int = 0, maximumConnections: Int = 32) {
            self.requestDeadline = requestDeadline
            self.writeDeadline = writeDeadline
            self.maximumRequestSize = maximumRequestSize
            self.maximumBodySize = maximumBodySize
            self.maximumConnections = maximumConnections
        }
    }

    /// How long an answered connection is still read (and the bytes thrown away) after its
    /// response, so that closing it with unread input does not reset the answer away.
    static let lingerAfterResponse: Duration = .seconds(1)

    package let port: Int
    private let control: Control

    /// Binds at once, so a wrong address fails at start-up with a clear error; `setting`
    /// names the address in that error (`PGPUSH_METRICS_ADDR`, `PGPUSH_WEB_LISTEN`).
    package init(address: String, setting: String = "PGPUSH_METRICS_ADDR", limits: Limits = Limits(),
                route: @escaping @Sendable (HTTPRequest) -> HTTPResponse) throws(HTTPServerError) {
        let (host, port) = try Self.parse(address, setting: setting)
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socketDescriptor >= 0 else { throw HTTPServerError("\(setting): cannot open a socket") }
        var yes: Int32 = 1
        setsockopt(socketDescriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(socketDescriptor)
            throw HTTPServerError("\(setting): \(host) is not an IPv4 address")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(socketDescriptor, 128) == 0 else {
            let reason = String(cString: strerror(errno))
            close(socketDescriptor)
            throw HTTPServerError("\(setting): cannot listen on \(host):\(port): \(reason)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketDescriptor, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: actual.sin_port))
        let wakeUp = cshims_eventfd(0, 1)
        guard wakeUp >= 0 else {
            close(socketDescriptor)
            throw HTTPServerError("\(setting): cannot make an eventfd: \(String(cString: strerror(errno)))")
        }
        let control = Control(wakeUp: wakeUp, route: route)
        self.control = control
        // The thread owns the listener and every connection and closes them when it ends;
        // `control` (the stop flag and the eventfd) lives as long as either side holds it.
        let thread = Thread {
            // Set from the thread itself: Foundation's `Thread.name` does not reach the kernel here.
            _ = cshims_set_thread_name("pgpush-http")
            Loop(listener: socketDescriptor, control: control, limits: limits).run()
        }
        thread.start()
    }

    deinit { control.stop() }

    /// Connections held now: reading a head, writing a response or lingering after one.
    var connectionsHeld: Int { control.held.load(ordering: .acquiring) }

    /// Connections accepted since the server started; once it counts one, `connectionsHeld`
    /// already counted that connection (or a later state).
    var connectionsAccepted: Int { control.accepted.load(ordering: .acquiring) }

    /// Stops serving: the thread closes the listener and every connection and ends.
    package func stop() { control.stop() }

    package static func parse(_ address: String, setting: String) throws(HTTPServerError) -> (host: String, port: Int) {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
              (0...65535).contains(port) else {
            throw HTTPServerError("\(setting) must be HOST:PORT or :PORT, got \"\(address)\"")
        }
        var host = String(address[..<colon])
        if host.isEmpty { host = "0.0.0.0" }
        if host == "localhost" { host = "127.0.0.1" }
        return (host, port)
    }
}

/// Why a server could not start: the address is malformed or cannot be bound.
package struct HTTPServerError: Error, CustomStringConvertible, Sendable, Equatable {
    package let description: String
    package init(_ description: String) { self.description = description }
}
