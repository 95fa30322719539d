import Foundation
import Glibc

/// A TCP socket listening on 127.0.0.1 that never accepts on its own: every connect that
/// reaches it waits in the kernel's queue, where `takeConnections()` counts it. Tests that
/// prove no connection was attempted point a client at it.
package struct SilentListener {
    package let descriptor: Int32
    package let port: Int

    package init() throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = descriptor
        let ok = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else {
            Glibc.close(fd)
            throw TestSetupError("cannot listen")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// The connections the kernel queue holds (each a connect that reached the listener),
    /// taken out without blocking.
    package func takeConnections() -> Int {
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        var count = 0
        while true {
            let accepted = accept(descriptor, nil, nil)
            guard accepted >= 0 else { return count }
            Glibc.close(accepted)
            count += 1
        }
    }

    package func close() { Glibc.close(descriptor) }
}
