import APNsSimulator
import Foundation
import HTTP2TLS
import Locking
import PGPushTestSupport
import Testing

/// Lines a child process writes to a pipe, as an async sequence.
func lines(of pipe: Pipe) -> AsyncStream<String> {
    AsyncStream { continuation in
        let pending = Locked([UInt8]())
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                continuation.finish()
                return
            }
            let complete: [String] = pending.withLock { buffer in
                buffer.append(contentsOf: data)
                var result: [String] = []
                while let newline = buffer.firstIndex(of: 0x0A) {
                    result.append(String(decoding: buffer[..<newline], as: UTF8.self))
                    buffer.removeSubrange(...newline)
                }
                return result
            }
            complete.forEach { continuation.yield($0) }
        }
    }
}

/// The first line containing `marker`, or nil when the stream ends or `timeout` passes.
func firstLine(containing marker: String, in stream: AsyncStream<String>, timeout: Duration) async -> String? {
    await withTaskGroup(of: String?.self) { group in
        group.addTask {
            for await line in stream where line.contains(marker) { return line }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// The report a running process writes on SIGUSR1; the file appears asynchronously, so
/// this looks for it every 20 ms until it parses or `timeout` passes.
func reportFile(at path: String, timeout: Duration) async -> SimulatorReport? {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if let data = FileManager.default.contents(atPath: path),
           let report = try? JSONDecoder().decode(SimulatorReport.self, from: data) {
            return report
        }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return nil
}

@Suite("pgpush mock-apns as a separate process")
struct MockAPNsProcessTests {
    @Test(.enabled(if: ChildProcess.pgpushBinary != nil, "build pgpush first (swift build)"))
    func launchServeAndReportOnSIGTERM() async throws {
        let binary = try #require(ChildProcess.pgpushBinary)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mock-apns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyPath = directory.appendingPathComponent("key.p8").path
        try signingKey().writePKCS8(toFile: keyPath)
        let caPath = directory.appendingPathComponent("ca.pem").path
        let reportPath = directory.appendingPathComponent("report.json").path

        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["mock-apns", "--port", "0", "--team-id", testTeamID, "--key-id", testKeyID, "--p8", keyPath,
                             "--bundle-id", testBundleID, "--ca-out", caPath, "--report", reportPath,
                             "--script", "\(testDeviceToken)=503"]
        let output = Pipe()
        process.standardOutput = output
        let exited = AsyncStream<Int32> { continuation in
            process.terminationHandler = { finished in
                continuation.yield(finished.terminationStatus)
                continuation.finish()
            }
        }
        try process.run()
        defer { if process.isRunning { process.interrupt() } }

        let line = try #require(await firstLine(containing: "mock-apns listening on", in: lines(of: output), timeout: .seconds(20)))
        #expect(line.hasSuffix("(CA: \(caPath))"))
        let portText = try #require(line.split(separator: ":").dropFirst(2).first?.prefix { $0.isNumber })
        let port = try #require(Int(portText))

        let client = try HTTP2Client(threadName: "mock-apns-process-test")
        defer { client.shutdown() }
        let connection = try await client.connect(host: "127.0.0.1", port: port,
                                                  configuration: HTTP2ClientConfiguration(tls: try ClientTLSContext(extraCAFile: caPath)))
        let jwt = try makeJWT()
        #expect(try await connection.send(pushRequest(jwt: jwt)).status == 503)
        #expect(try await connection.send(pushRequest(jwt: jwt)).status == 200)

        // SIGUSR1 writes the report and keeps serving.
        kill(process.processIdentifier, SIGUSR1)
        let interim = try #require(await reportFile(at: reportPath, timeout: .seconds(10)))
        #expect(interim.totalRequests == 2)
        try FileManager.default.removeItem(atPath: reportPath)
        #expect(try await connection.send(pushRequest(jwt: jwt)).status == 200)

        process.terminate()
        var status: Int32?
        for await code in exited { status = code }
        #expect(status == 0)
        let report = try JSONDecoder().decode(SimulatorReport.self, from: Data(contentsOf: URL(fileURLWithPath: reportPath)))
        #expect(report.totalRequests == 3)
        #expect(report.count(status: 200) == 2 && report.count(reason: "ServiceUnavailable") == 1)
        #expect(report.connections.count == 1)
    }
}
