import APNsSimulator
import FCMSimulator
import Foundation
import PGPushCore
import Spawn
import WebPushSimulator

/// `pgpush mock-apns` (or `pgpush mock-fcm`, `pgpush mock-webpush`) in its own process, so its CPU does not count as
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
    /// Web Push: the VAPID key the simulator made, which the worker signs with, and the browser
    /// subscriptions it made for it (one `PushSubscription.toJSON()` a line).
    package let vapidKeyFile: String?
    package let subscriptionsFile: String?
    /// Web Push: browser subscriptions the simulator makes; rows go to them in turn.
    static let webPushSubscriptions = 1000

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
        fcmCredentialsFile = service == .fcm ? directory + "/\(name)-service-account.json" : nil
        vapidKeyFile = service == .webpush ? directory + "/\(name)-vapid.pem" : nil
        subscriptionsFile = service == .webpush ? directory + "/\(name)-subscriptions.jsonl" : nil
        if let credentialsFile = fcmCredentialsFile {
            arguments = ["mock-fcm", "--port", "0", "--credentials-out", credentialsFile, "--project", "pgpush-bench",
                         "--ca-out", caFile, "--report", reportPath]
        } else if let vapidKeyFile, let subscriptionsFile {
            arguments = ["mock-webpush", "--port", "0", "--vapid-key-out", vapidKeyFile,
                         "--subscriptions", String(Self.webPushSubscriptions), "--subscriptions-out", subscriptionsFile,
                         "--ca-out", caFile, "--report", reportPath]
        } else {
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

    /// `stop()` for the Web Push simulator.
    package func stopWebPush() throws -> (report: WebPushSimulatorReport, usage: ProcessUsage) {
        let (data, usage) = try stopForReport()
        return (try JSONDecoder().decode(WebPushSimulatorReport.self, from: data), usage)
    }

    /// The subscriptions the Web Push simulator made (`subscriptionsFile`).
    package func subscriptions() throws -> [String] {
        guard let subscriptionsFile, let data = FileManager.default.contents(atPath: subscriptionsFile) else {
            throw BenchError("the Web Push simulator wrote no subscriptions")
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
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
