import Foundation
import Glibc

/// A free TCP port on 127.0.0.1 (bound, then released), for a server that starts later
/// or in another process.
package func freePort() throws -> Int {
    let (fd, port) = try boundSocket()
    close(fd)
    return port
}

/// A TCP socket bound to a free loopback port and not listening: a connect to it is refused
/// for as long as it stays open, and no other test can take the port meanwhile.
package func boundSocket() throws -> (descriptor: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSetupError("socket() failed: errno \(errno)") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let status = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard status else {
        close(fd)
        throw TestSetupError("cannot find a free port")
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// The TCP ports process `pid` listens on over IPv4. Read from /proc: the process's socket
/// inodes, matched against the kernel's table of listening sockets. A child may hold
/// listening sockets it inherited from this process, so a port is best asked for by number.
package func listeningPorts(ofProcess pid: Int32) -> Set<Int> {
    let descriptors = "/proc/\(pid)/fd"
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: descriptors) else { return [] }
    let inodes = Set(entries.compactMap { entry -> Substring? in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(descriptors)/\(entry)"),
              target.hasPrefix("socket:[") else { return nil }
        return target.dropFirst("socket:[".count).dropLast()
    })
    guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return [] }
    var ports: Set<Int> = []
    for line in table.split(separator: "\n").dropFirst() {
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …; 0A is LISTEN.
        let fields = line.split(separator: " ")
        guard fields.count > 9, fields[3] == "0A", inodes.contains(fields[9]),
              let port = fields[1].split(separator: ":").last.flatMap({ Int($0, radix: 16) }) else { continue }
        ports.insert(port)
    }
    return ports
}

/// The port a child told to bind port 0 listens on: one of its listening ports that this
/// process does not hold too (the child may have inherited some of ours); nil while none.
package func listeningPort(ofProcess pid: Int32) -> Int? {
    listeningPorts(ofProcess: pid).subtracting(listeningPorts(ofProcess: getpid())).min()
}
