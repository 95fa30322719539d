import Foundation
import Glibc
import HTTP2TLS
import Locking
import PGPushTestSupport
import Testing

/// `permitsAddress`: a host whose addresses are all refused is never connected to; the
/// addresses permitted are the ones connected to.
struct AddressPermissionTests {
    @Test func aHostResolvingOnlyToRefusedAddressesIsNeverConnectedTo() async throws {
        let listener = try SilentListener()
        defer { listener.close() }
        let client = try HTTP2Client(threadName: "permits-test")
        defer { client.shutdown() }
        var configuration = try clientConfiguration()
        configuration.connectTimeout = .seconds(2)
        let seen = Locked<[[UInt8]]>([])
        configuration.permitsAddress = { address in
            seen.withLock { $0.append(address) }
            return address.first != 127 && address != [UInt8](repeating: 0, count: 15) + [1]
        }
        for host in ["127.0.0.1", "localhost"] {
            await #expect {
                try await client.connect(host: host, port: listener.port, configuration: configuration)
            } throws: { error in
                guard case .addressNotPermitted(let named, _) = error as? ConnectError else { return false }
                return named == host
            }
        }
        #expect(listener.takeConnections() == 0)
        #expect(seen.withLock { $0.contains([127, 0, 0, 1]) })

        // The same listener, the address permitted: the connect reaches it (and times out in
        // the handshake nobody answers).
        configuration.permitsAddress = { $0 == [127, 0, 0, 1] }
        await #expect(throws: ConnectError.self) {
            try await client.connect(host: "127.0.0.1", port: listener.port, configuration: configuration)
        }
        #expect(listener.takeConnections() == 1)
    }
}
