import APNsClient
import Foundation
import Spawn

/// A peer for the worker's own CPU at a steady rate, measured in the same run: h2load,
/// nghttp2's load generator (C, on the same nghttp2 and OpenSSL as pgpush), sends the same
/// pushes to a simulator of its own at the same rate, over as many connections, for as
/// many seconds, paced by `--rps` as the worker is by its rows. It does the transport only:
/// no database, no claim, no outcome, one token for every request. What the worker spends
/// per notification above it is the rest of its work; a worker below it would need a
/// cheaper HTTP/2 client than nghttp2's own.
///
/// h2load does not verify the simulator's certificate (it has no option to); it talks only
/// to the bench's simulator on the loopback, with the bench's throwaway key.
enum TransportPeerRun {
    /// Nil when h2load is not installed.
    static func run(rate: Int, connections: Int, in context: BenchContext) throws -> TransportPeerResult? {
        guard let h2load = ChildProcess.tool("h2load") else { return nil }
        let options = context.options
        let name = "peer\(rate)"
        let payloadFile = context.directory + "/\(name)-payload.json"
        try BenchRows.payload(bytes: options.payloadBytes).write(toFile: payloadFile, atomically: true, encoding: .utf8)
        let token = try ProviderTokenSigner(keyFile: context.credentials.keyFile, keyID: BenchCredentials.keyID,
                                            teamID: BenchCredentials.teamID).sign(issuedAt: Date())
        let simulator = try SimulatorProcess(executable: context.executable, credentials: context.credentials,
                                             directory: context.directory, name: name, logRequests: false)
        context.progress("transport peer: h2load, \(rate)/s for \(options.steadySeconds) s over \(connections) connection(s)")
        let outputPath = context.directory + "/\(name).log"
        let peer = try ChildProcess.spawn(h2load, [
            "-D", String(options.steadySeconds), "-c", String(connections),
            "--rps", String(format: "%g", Double(rate) / Double(connections)),
            "-H", "authorization: \(token.authorizationHeader)", "-H", "apns-topic: \(BenchCredentials.bundleID)",
            "-H", "apns-push-type: alert", "-d", payloadFile,
            simulator.baseURL + "/3/device/" + String(repeating: "ab", count: 32),
        ], environment: [:], outputPath: outputPath)
        let (status, usage) = peer.stop(signal: nil)
        _ = try simulator.stop()
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0, let counts = H2LoadCounts(output: output) else {
            throw BenchError("h2load exited with status \(status) or printed no counts; see \(name).log")
        }
        return TransportPeerResult(offeredPerSecond: rate, connections: connections, seconds: options.steadySeconds,
                                   requests: counts.requests, succeeded: counts.succeeded, answered2xx: counts.answered2xx,
                                   usage: usage)
    }
}

/// The counts of h2load's summary: `requests: N total, … M succeeded, …` and
/// `status codes: K 2xx, …`.
struct H2LoadCounts: Equatable {
    var requests: Int
    var succeeded: Int
    var answered2xx: Int
}

extension H2LoadCounts {
    init?(output: String) {
        func count(in prefix: String, before word: String) -> Int? {
            guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return nil }
            let fields = line.dropFirst(prefix.count).split(separator: ",").map { $0.split(separator: " ") }
            return fields.first { $0.count == 2 && $0[1] == word }.flatMap { Int($0[0]) }
        }
        guard let requests = count(in: "requests: ", before: "total"), let succeeded = count(in: "requests: ", before: "succeeded"),
              let answered2xx = count(in: "status codes: ", before: "2xx") else { return nil }
        self.requests = requests
        self.succeeded = succeeded
        self.answered2xx = answered2xx
    }
}

/// h2load at one steady rate (`TransportPeerRun`).
package struct TransportPeerResult: Sendable, Codable {
    package var offeredPerSecond: Int
    package var connections: Int
    package var seconds: Int
    package var requests: Int
    package var succeeded: Int
    package var answered2xx: Int
    /// h2load's whole life: its connections' handshakes are in it, as the worker's are not.
    package var usage: ProcessUsage

    package var cpuMicrosecondsPerRequest: Double { usage.cpuSeconds * 1e6 / Double(max(succeeded, 1)) }
}
