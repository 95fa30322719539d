import Foundation
import Spawn

/// `pgpush run` in its own process, pointed at one database and the simulator,
/// so its CPU time and peak memory can be read from `wait4` when it exits.
package final class WorkerProcess: Sendable {
    package let process: ChildProcess
    package let startedAt: ContinuousClock.Instant

    package init(executable: String, databaseURL: String, listenDatabaseURL: String? = nil, simulator: SimulatorProcess,
                credentials: BenchCredentials, connections: Int, ratePerConnection: Int, directory: String,
                name: String) throws(BenchError) {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PGPUSH_") && $0.key != "DATABASE_URL" }
        environment["DATABASE_URL"] = databaseURL
        if let listenDatabaseURL { environment["PGPUSH_LISTEN_DATABASE_URL"] = listenDatabaseURL }
        environment["PGPUSH_CA_FILE"] = simulator.caFile
        if let fcmCredentials = simulator.fcmCredentialsFile {
            environment["PGPUSH_FCM_URL"] = simulator.baseURL
            environment["PGPUSH_FCM_CREDENTIALS_FILE"] = fcmCredentials
        } else if let vapidKey = simulator.vapidKeyFile {
            environment["PGPUSH_VAPID_KEY_FILE"] = vapidKey
            environment["PGPUSH_VAPID_SUBJECT"] = "mailto:bench@example.com"
            environment["PGPUSH_WEBPUSH_ALLOWED_ORIGINS"] = simulator.baseURL
        } else {
            environment["PGPUSH_APNS_URL"] = simulator.baseURL
            environment["PGPUSH_TEAM_ID"] = BenchCredentials.teamID
            environment["PGPUSH_KEY_ID"] = BenchCredentials.keyID
            environment["PGPUSH_KEY_FILE"] = credentials.keyFile
            environment["PGPUSH_TOPIC"] = BenchCredentials.bundleID
        }
        environment["PGPUSH_CONNECTIONS"] = String(connections)
        environment["PGPUSH_RATE_PER_CONNECTION"] = String(ratePerConnection)
        environment["PGPUSH_DRAIN_SECONDS"] = "10"
        environment["PGPUSH_WORKER_ID"] = "bench-\(name)"
        startedAt = .now
        process = try ChildProcess.spawn(executable, ["run"], environment: environment,
                                         outputPath: directory + "/\(name)-worker.out")
    }

    /// SIGTERM (graceful drain; not again when `signalled`: a second signal makes the worker
    /// exit at once), then the usage of the whole life of the process.
    package func stop(signalled: Bool = false) throws(BenchError) -> ProcessUsage {
        let (status, usage) = process.stop(signal: signalled ? nil : SIGTERM)
        let exited = status & 0x7f == 0
        guard exited && (status >> 8) & 0xff == 0 else {
            throw BenchError("the worker ended with status \(status):\n\(process.lastLines())")
        }
        return usage
    }

    /// Throws if the worker died early, with the end of its output.
    package func checkAlive() throws(BenchError) {
        if process.hasExited { throw BenchError("the worker exited early:\n\(process.lastLines())") }
    }
}
