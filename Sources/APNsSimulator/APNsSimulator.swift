import Foundation
import HTTP2TLS
import Locking
import PushCrypto

/// An APNs look-alike over real TLS + HTTP/2, for tests, the demo, the
/// benchmark and `pgpush mock-apns`.
///
/// ```swift
/// let simulator = try APNsSimulator(configuration: configuration)
/// let port = try simulator.start()
/// // … point a client at https://127.0.0.1:port, trusting simulator.caCertificatePath …
/// let report = simulator.report()
/// simulator.stop()
/// ```
package final class APNsSimulator: Sendable {
    package let configuration: SimulatorConfiguration
    private let handler: SimulatorHandler
    private let running = Locked<Running?>(nil)

    private struct Running {
        var server: HTTP2Server
        var caCertificatePath: String?
        var authority: SelfSignedAuthority?
        /// A temporary folder made for the CA file, removed on stop.
        var temporaryDirectory: URL?
    }

    /// Checks the fault plan and opens the log file; the server starts in `start()`.
    package init(configuration: SimulatorConfiguration) throws(SimulatorError) {
        do { try configuration.faults.validate() } catch { throw .invalidFaults(error) }
        guard configuration.maxConcurrentStreams >= 1 else {
            throw .invalidConfiguration("max concurrent streams must be at least 1")
        }
        if case .certificate = configuration.authentication,
           configuration.faults.staleProviderTokensAfterRequests != nil || configuration.faults.expireEveryProviderToken {
            // Silently ignoring them would let a test pass without the fault it asked for.
            throw .invalidConfiguration("provider-token faults need token authentication, not client certificates")
        }
        self.configuration = configuration
        let log = try configuration.logPath.map { (path) throws(SimulatorError) in try RequestLog(path: path) }
        handler = SimulatorHandler(configuration: configuration, log: log)
    }

    deinit { stop() }

    /// Starts listening and returns the bound port. A simulator starts once.
    @discardableResult
    package func start() throws(SimulatorError) -> Int {
        try running.withLock { (running) throws(SimulatorError) -> Int in
            guard running == nil else { throw .alreadyStarted }
            let started = try Self.prepareCertificate(configuration)
            var serverConfiguration = HTTP2ServerConfiguration(certificateChain: started.chain, privateKey: started.key)
            serverConfiguration.host = configuration.host
            serverConfiguration.port = configuration.port
            switch configuration.authentication {
            case .token:
                // APNs allows one stream until a request with a valid JWT.
                serverConfiguration.maxConcurrentStreams = 1
            case .certificate(let trustedCAFile):
                serverConfiguration.maxConcurrentStreams = configuration.maxConcurrentStreams
                serverConfiguration.clientCertificates = trustedCAFile.map { .require(trustedCAFile: $0) } ?? .request
            }
            let server: HTTP2Server
            switch Self.startServer(serverConfiguration, handler: handler) {
            case .success(let value): server = value
            case .failure(let error):
                if let folder = started.temporaryDirectory { try? FileManager.default.removeItem(at: folder) }
                throw .server(error)
            }
            handler.attach(server)
            running = Running(server: server, caCertificatePath: started.caPath, authority: started.authority,
                              temporaryDirectory: started.temporaryDirectory)
            return server.port
        }
    }

    /// The bound port while running.
    package var port: Int? { running.withLock { $0?.server.port } }

    /// The PEM file of the generated CA (nil with `.files` certificates).
    package var caCertificatePath: String? { running.withLock { $0?.caCertificatePath } }

    /// The generated CA, e.g. to issue client certificates in tests (nil with `.files`).
    package var certificateAuthority: SelfSignedAuthority? { running.withLock { $0?.authority } }

    /// `https://host:port` for `PGPUSH_APNS_URL`; a wildcard bind address becomes 127.0.0.1.
    package var baseURL: String? {
        guard let port else { return nil }
        let host = ["0.0.0.0", "::", ""].contains(configuration.host) ? "127.0.0.1" : configuration.host
        return host.contains(":") ? "https://[\(host)]:\(port)" : "https://\(host):\(port)"
    }

    /// Transport counters (connections, streams, the most concurrent streams on one connection).
    package var serverStatistics: ServerStatistics? { running.withLock { $0?.server.statistics } }

    /// What was received and answered so far (also after `stop()`).
    package func report() -> SimulatorReport {
        handler.flushLog()
        return handler.report
    }

    /// Writes `report()` as JSON.
    package func writeReport(toFile path: String) throws(SimulatorError) {
        do { try report().jsonData().write(to: URL(fileURLWithPath: path), options: .atomic) } catch {
            throw .cannotWriteFile(path: path)
        }
    }

    /// Closes every connection and the listener, flushes the log; idempotent.
    package func stop() {
        let stopped = running.withLock { running -> Running? in
            defer { running = nil }
            return running
        }
        guard let stopped else { return }
        stopped.server.shutdown()
        handler.attach(nil)
        handler.closeLog()
        if let folder = stopped.temporaryDirectory { try? FileManager.default.removeItem(at: folder) }
    }

    // MARK: certificates

    private struct PreparedCertificate {
        var chain: PEMSource
        var key: PEMSource
        var caPath: String?
        var authority: SelfSignedAuthority?
        var temporaryDirectory: URL?
    }

    private static func startServer(_ configuration: HTTP2ServerConfiguration, handler: SimulatorHandler) -> Result<HTTP2Server, ServerError> {
        do throws(ServerError) {
            return .success(try HTTP2Server(configuration: configuration, handler: handler, threadName: "mock-apns"))
        } catch {
            return .failure(error)
        }
    }

    private static func prepareCertificate(_ configuration: SimulatorConfiguration) throws(SimulatorError) -> PreparedCertificate {
        switch configuration.serverCertificate {
        case .files(let chain, let key):
            return PreparedCertificate(chain: .file(chain), key: .file(key))
        case .generated(let requestedPath):
            let authority: SelfSignedAuthority
            let issued: IssuedCertificate
            do {
                authority = try SelfSignedAuthority.generate(commonName: "pgpush mock-apns CA")
                var addresses = ["127.0.0.1", "::1"]
                if Self.isSpecificIPAddress(configuration.host), !addresses.contains(configuration.host) {
                    addresses.append(configuration.host)
                }
                issued = try authority.issueServerCertificate(ipAddresses: addresses)
            } catch {
                throw .credentials(error)
            }
            var temporaryDirectory: URL?
            let caPath: String
            if let requestedPath {
                caPath = requestedPath
            } else {
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pgpush-mock-apns-\(UUID().uuidString)")
                do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
                    throw .cannotWriteFile(path: folder.path)
                }
                temporaryDirectory = folder
                caPath = folder.appendingPathComponent("ca.pem").path
            }
            do { try Data(authority.certificatePEM.utf8).write(to: URL(fileURLWithPath: caPath), options: .atomic) } catch {
                throw .cannotWriteFile(path: caPath)
            }
            return PreparedCertificate(chain: .text(issued.certificatePEM), key: .text(issued.privateKeyPEM), caPath: caPath,
                                       authority: authority, temporaryDirectory: temporaryDirectory)
        }
    }

    private static func isSpecificIPAddress(_ host: String) -> Bool {
        guard !["0.0.0.0", "::", ""].contains(host) else { return false }
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, host, &buffer) == 1 || inet_pton(AF_INET6, host, &buffer) == 1
    }
}
