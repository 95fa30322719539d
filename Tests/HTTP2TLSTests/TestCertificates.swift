import Foundation
import PGPushTestSupport
import Glibc

/// Certificates made with the `openssl` CLI once per test run, in a temporary directory:
/// a CA with a server certificate for localhost/127.0.0.1, the same CA's certificate for
/// another host name, and an unrelated CA with its own localhost certificate.
struct TestCertificates: Sendable {
    let directory: String
    var caFile: String { directory + "/ca.pem" }
    var serverCertificate: String { directory + "/server.pem" }
    var serverKey: String { directory + "/server.key" }
    var wrongHostCertificate: String { directory + "/wronghost.pem" }
    var wrongHostKey: String { directory + "/wronghost.key" }
    var otherCAFile: String { directory + "/otherca.pem" }
    var otherCAServerCertificate: String { directory + "/otherserver.pem" }
    var otherCAServerKey: String { directory + "/otherserver.key" }

    static let shared: Result<TestCertificates, TestSetupError> = make()

    static func get() throws -> TestCertificates { try shared.get() }

    private static func make() -> Result<TestCertificates, TestSetupError> {
        let directory = NSTemporaryDirectory() + "h2tls-certs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let run = { (arguments: [String]) throws in _ = try Tool.run("openssl", arguments, in: directory) }
            for ca in ["ca", "otherca"] {
                try run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                         "-keyout", "\(ca).key", "-out", "\(ca).pem", "-days", "2", "-subj", "/CN=pgpush test \(ca)",
                         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
            }
            for (name, ca, san) in [("server", "ca", "DNS:localhost,IP:127.0.0.1"),
                                    ("wronghost", "ca", "DNS:wrong.example"),
                                    ("otherserver", "otherca", "DNS:localhost,IP:127.0.0.1")] {
                try "subjectAltName=\(san)\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n"
                    .write(toFile: directory + "/\(name).ext", atomically: true, encoding: .utf8)
                try run(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                         "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(name)"])
                try run(["x509", "-req", "-in", "\(name).csr", "-CA", "\(ca).pem", "-CAkey", "\(ca).key", "-CAcreateserial",
                         "-out", "\(name).pem", "-days", "2", "-extfile", "\(name).ext"])
            }
            return .success(TestCertificates(directory: directory))
        } catch let error as TestSetupError {
            return .failure(error)
        } catch {
            return .failure(TestSetupError("\(error)"))
        }
    }
}

/// Runs command-line tools (openssl, h2load, nghttpd) for tests.
enum Tool {
    @discardableResult
    static func run(_ name: String, _ arguments: [String], in directory: String? = nil) throws -> String {
        guard let executable = ChildProcess.tool(name) else { throw TestSetupError("\(name) not found") }
        let (status, text) = try ChildProcess.runToCompletion(executable, arguments, in: directory)
        guard status == 0 else {
            throw TestSetupError("\(name) \(arguments.joined(separator: " ")) failed: \(text)")
        }
        return text
    }

    static func kill(_ process: Process) {
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Starts a long-running tool with stdin held open; the caller terminates it.
    static func start(_ name: String, _ arguments: [String]) throws -> Process {
        guard let executable = ChildProcess.tool(name) else { throw TestSetupError("\(name) not found") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }
}
