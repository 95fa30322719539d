import Foundation
import Testing
import PGPushTestSupport

/// Loopback traffic to one port, captured by tcpdump and read back, decrypted, by tshark:
/// what left this machine's TCP stack and when, as APNs would see it arrive, independent
/// of when the simulator's thread got round to reading it.
///
/// Needs tcpdump and tshark (Debian packages of those names, installed by
/// deploy/local/install-dependencies.sh) and the right to capture (root, or
/// CAP_NET_RAW on tcpdump).
final class WireCapture {
    let file: String
    let port: Int
    private let tcpdump: ChildProcess

    static let tcpdumpPath = ChildProcess.tool("tcpdump")
    static let tsharkPath = ChildProcess.tool("tshark")
    static var available: Bool { tcpdumpPath != nil && tsharkPath != nil && geteuid() == 0 }
    /// In CI a missing tool fails the test instead of skipping it.
    static var required: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }
    static let unavailable: Comment = """
        skipped: capturing needs tcpdump and tshark (deploy/local/install-dependencies.sh) and root
        """

    /// Starts capturing and returns once tcpdump says it is listening.
    static func start(port: Int, file: String) async throws -> WireCapture {
        guard let tcpdumpPath, tsharkPath != nil else { throw TestSetupError("tcpdump or tshark is not installed") }
        // -U: each packet reaches the file as it is captured, so stopping loses nothing;
        // -B: a kernel buffer (KiB) large enough that a busy second drops nothing.
        let tcpdump = try ChildProcess(tcpdumpPath, ["-i", "lo", "-n", "-s", "0", "-U", "-B", "32768",
                                                     "-w", file, "tcp port \(port)"])
        guard await tcpdump.waitForOutput(containing: "listening on", timeout: .seconds(30)) else {
            tcpdump.signal(SIGKILL)
            throw TestSetupError("tcpdump did not start listening: \(tcpdump.output)")
        }
        return WireCapture(file: file, port: port, tcpdump: tcpdump)
    }

    private init(file: String, port: Int, tcpdump: ChildProcess) {
        self.file = file
        self.port = port
        self.tcpdump = tcpdump
    }

    /// Stops the capture once the traffic has ended; returns how many packets the kernel
    /// dropped (tcpdump's own count).
    ///
    /// tcpdump, told to stop, discards what it has not yet read from its kernel buffer, and on
    /// a loaded machine it reads seconds behind. So it is stopped only once the file has
    /// stopped growing: everything sent before the call has been written.
    func stop() async throws -> Int {
        var lastSize = -1
        _ = try? await eventually(timeout: .seconds(120), every: .milliseconds(750)) {
            let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
            defer { lastSize = size }
            return size == lastSize
        }
        // SIGTERM, not SIGINT: a test runner may start children with SIGINT ignored.
        tcpdump.signal(SIGTERM)
        guard await tcpdump.wait(timeout: .seconds(60)) != nil else { throw TestSetupError("tcpdump did not stop") }
        let output = tcpdump.output
        guard let line = output.split(separator: "\n").first(where: { $0.hasSuffix("packets dropped by kernel") }),
              let dropped = Int(line.split(separator: " ")[0]) else {
            throw TestSetupError("tcpdump printed no drop count: \(output)")
        }
        return dropped
    }

    /// Every HTTP/2 request the client sent, decrypted with the client's key log: per TCP
    /// connection, the capture time of the segment that completed each request's HEADERS.
    func requests(keyLog: String) throws -> [Int: [Double]] {
        let (status, output) = try ChildProcess.runToCompletion(Self.tsharkPath!, [
            "-r", file, "-n", "-d", "tcp.port==\(port),tls", "-o", "tls.keylog_file:\(keyLog)",
            "-Y", "http2.type == 1 && tcp.dstport == \(port)",
            "-T", "fields", "-E", "occurrence=a", "-e", "tcp.stream", "-e", "frame.time_epoch", "-e", "http2.type",
        ])
        guard status == 0 else { throw TestSetupError("tshark failed (\(status)): \(output.suffix(2000))") }
        var requests: [Int: [Double]] = [:]
        // stdout and stderr share the output; only the field lines have three tab-separated fields.
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 3, let stream = Int(fields[0]), let time = Double(fields[1]) else { continue }
            // One segment can carry several frames; each HEADERS frame from the client is a request.
            let headers = fields[2].split(separator: ",").filter { $0 == "1" }.count
            requests[stream, default: []].append(contentsOf: repeatElement(time, count: headers))
        }
        return requests.mapValues { $0.sorted() }
    }
}

/// What one connection's requests look like at the wire.
struct WireRate {
    /// The most requests in any one-second window, wherever it starts.
    let busiestSecond: Int
    /// Requests per one-second window, whole windows from the first request up to `end`.
    let windows: [Int]
    /// The rate this connection kept while nothing held it up: `limit` requests over the
    /// quickest span from a request to the one `limit` later (from its second second up to
    /// `end`). A limiter that wastes capacity stretches every span (one that counts each
    /// request twice keeps them all at 2 s or more: 50/s); a worker or machine that stalls,
    /// or a connection that waits for rows its worker has not claimed yet, stretches only
    /// some, which eight worker processes on two cores make happen: the quickest tenth of
    /// the spans was seen at 50.6/s on 0.3.0. No span is under 1 s while the cap holds
    /// (`busiestSecond`), so this is at most `limit`.
    let unhinderedRate: Double

    /// `times` sorted; only what happened while the connection had work (before `end`) counts
    /// towards the windows and the rate.
    init(times: [Double], end: Double, limit: Int) {
        busiestSecond = PGPushTestSupport.busiestSecond(times)
        guard let start = times.first, end > start + 1 else { windows = []; unhinderedRate = 0; return }
        var counts = [Int](repeating: 0, count: Int(end - start))
        for time in times where time < start + Double(counts.count) { counts[Int(time - start)] += 1 }
        windows = counts
        let steady = times.filter { $0 >= start + 1 && $0 < end }
        let spans = steady.count > limit ? (0..<(steady.count - limit)).map { steady[$0 + limit] - steady[$0] }.sorted() : []
        unhinderedRate = spans.first.map { Double(limit) / $0 } ?? 0
    }
}
