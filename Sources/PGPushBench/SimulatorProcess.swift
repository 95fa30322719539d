import APNsSimulator
import FCMSimulator
import Foundation
import PGPushCore
import Spawn

/// `pgpush mock-apns` (or `pgpush mock-fcm`) in its own process, so its CPU does not count as
/// the worker's and the two talk over a real socket with TLS.
package final class SimulatorProcess: Sendable {
    package let process: ChildProcess
    package let service: Service
    package let baseURL: String
    package let caFile: String
    package let reportPath: String
    package let logPath: String?
    /// FCM: the service-account file the simulator wrote, which the worker signs with.
    package let fcmCredentialsFile: String?

    /// The simulator stands for APNs, which answers from machines of its own. On two cores
    /// shared with the worker and PostgreSQL it would otherwise wait its turn behind the
    /// process it measures, read requests late, and stamp them late: so it runs at a raised
    /// priority (nice -10, through `nice`, which execs in place so the pid stays the one
    /// whose CPU time is counted) when the bench may raise one, i.e. as root.
    static let niceness: Int32? = geteuid() == 0 && FileManager.default.isExecutableFile(atPath: niceTool) ? -10 : nil
    private static let niceTool = "/usr/bin/nice"

    /// Starts the simulator on a free port and waits for its "listening" line.
    /// `extraArguments` are mock-apns flags (faults).
    package init(executable: String, credentials: BenchCredentials, directory: String, name: String,
                logRequests: Bool, extraArguments: [String] = [], service: Service = .apns) throws {
        self.service = service
        caFile = directory + "/\(name)-ca.pem"
        reportPath = directory + "/\(name)-report.json"
        logPath = logRequests && service == .apns ? directory + "/\(name)-requests.jsonl" : nil
        var arguments: [String]
        if service == .fcm {
            let credentialsFile = directory + "/\(name)-service-account.json"
            fcmCredentialsFile = credentialsFile
            arguments = ["mock-fcm", "--port", "0", "--credentials-out", credentialsFile, "--project", "pgpush-bench",
                         "--ca-out", caFile, "--report", reportPath]
        } else {
            fcmCredentialsFile = nil
            arguments = ["mock-apns", "--port", "0", "--p8", credentials.keyFile, "--team-id", BenchCredentials.teamID,
                         "--key-id", BenchCredentials.keyID, "--bundle-id", BenchCredentials.bundleID,
                         "--ca-out", caFile, "--report", reportPath]
        }
        if let logPath { arguments += ["--log", logPath] }
        arguments += extraArguments
        var command = executable
        if let niceness = Self.niceness {
            arguments = ["-n", String(niceness), executable] + arguments
            command = Self.niceTool
        }
        process = try ChildProcess.spawn(command, arguments, environment: ProcessInfo.processInfo.environment,
                                         outputPath: directory + "/\(name)-simulator.out")
        let ready = "\(arguments.first { $0.hasPrefix("mock-") } ?? "mock-apns") listening on "
        let line = try process.waitForLine(startingWith: ready, timeout: .seconds(30))
        let rest = line.dropFirst(ready.count)
        baseURL = String(rest.prefix { $0 != " " })
    }

    /// SIGTERM; the simulator writes its report and log, then exits.
    package func stop() throws -> (report: SimulatorReport, usage: ProcessUsage) {
        let (data, usage) = try stopForReport()
        return (try JSONDecoder().decode(SimulatorReport.self, from: data), usage)
    }

    /// `stop()` for the FCM simulator.
    package func stopFCM() throws -> (report: FCMSimulatorReport, usage: ProcessUsage) {
        let (data, usage) = try stopForReport()
        return (try JSONDecoder().decode(FCMSimulatorReport.self, from: data), usage)
    }

    private func stopForReport() throws -> (Data, ProcessUsage) {
        let (_, usage) = process.stop(signal: SIGTERM)
        guard let data = FileManager.default.contents(atPath: reportPath) else {
            throw BenchError("the simulator wrote no report at \(reportPath):\n\(process.lastLines())")
        }
        return (data, usage)
    }

    /// The request log's entries (needs `logRequests`), in file order.
    package func requestLog() throws -> [RequestLogEntry] {
        guard let logPath, let data = FileManager.default.contents(atPath: logPath) else { return [] }
        let decoder = JSONDecoder()
        var entries: [RequestLogEntry] = []
        for line in data.split(separator: 0x0A) where !line.isEmpty {
            entries.append(try decoder.decode(RequestLogEntry.self, from: Data(line)))
        }
        return entries
    }
}
