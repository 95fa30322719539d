import APNsClient
import Foundation
import HTTP2TLS
import Postgres
import PushQueue
import PushWorker

enum DoctorCommand {
    static let help = """
        pgpush doctor — check a worker's configuration before (or while) it runs

        Checks, each with a verdict (✔ ok, ⚠ warning, ✘ failure):
          - the configuration (the same flags, variables and file as `pgpush run`);
          - each app's credentials: the p8 key (readable, P-256, not readable by others) or the
            certificate (password, key match, days until it expires);
          - the database: connection, server version, migrations applied;
          - APNs: a TLS + HTTP/2 handshake with each app's endpoint (certificate verified).
        Secrets never appear in the output.

        Takes every flag of `pgpush run` (see pgpush run --help).
        Exit code: 0 when nothing failed (warnings allowed), 1 otherwise, 2 for a configuration error.

        Examples:
          pgpush doctor
          pgpush doctor --config /etc/pgpush/apps.json
        """

    static func run(_ arguments: Arguments) throws -> Int32 {
        var flags: [String: String] = [:]
        for flag in RunCommand.flags { if let value = arguments.value(flag) { flags[flag] = value } }
        var report = DoctorReport()
        let configuration: WorkerConfiguration
        do {
            configuration = try WorkerConfiguration.load(flags: flags, environment: ProcessInfo.processInfo.environment)
            report.ok("configuration", "\(configuration.apps.count) app(s): \(configuration.apps.map(\.name).joined(separator: ", "))")
        } catch {
            report.fail("configuration", error.description)
            report.print()
            return 2
        }
        for app in configuration.apps { checkCredentials(app, into: &report) }
        checkDatabase(configuration.databaseURL, into: &report)
        let endpointChecks = Locked(DoctorReport())
        _ = try blockOn {
            for app in configuration.apps {
                var check = DoctorReport()
                await checkEndpoint(app, into: &check)
                endpointChecks.withLock { $0.append(check) }
            }
        }
        report.append(endpointChecks.withLock { $0 })
        report.print()
        return report.failures == 0 ? 0 : 1
    }

    static func checkCredentials(_ app: AppConfiguration, into report: inout DoctorReport) {
        let subject = "app \(app.name): credentials"
        for warning in CredentialFilePermissions.warnings(for: app) { report.warn(subject, warning) }
        switch app.authentication {
        case .token(_, let keyID, let keyFile):
            do {
                _ = try APNsSenderFactory.makeClient(for: app)
                report.ok(subject, "token auth, key \(keyID) from \(keyFile) is a usable P-256 key")
            } catch {
                report.fail(subject, error.description)
            }
        case .certificate(let file, let password):
            do {
                let identity = try ClientIdentity.load(path: file, password: password)
                let days = identity.daysUntilExpiry()
                if days < 0 {
                    report.fail(subject, "certificate \(identity.subject) expired \(-days) day(s) ago: renew it")
                } else if days < 30 {
                    report.warn(subject, "certificate \(identity.subject) expires in \(days) day(s): renew it soon")
                } else {
                    report.ok(subject, "certificate \(identity.subject), \(days) day(s) until it expires")
                }
            } catch {
                report.fail(subject, "\(error)")
            }
        }
    }

    static func checkDatabase(_ conninfo: String, into report: inout DoctorReport) {
        do {
            let connection = try PostgresConnection(conninfo: conninfo)
            let version = try connection.query("SELECT current_setting('server_version')").string(0, 0) ?? "?"
            report.ok("database", "connected, PostgreSQL \(version)")
            let hasSchema = try connection.query("SELECT to_regclass('pgpush.schema_migrations') IS NOT NULL").bool(0, 0) == true
            let applied = hasSchema
                ? try connection.query("SELECT coalesce(max(version), 0) FROM pgpush.schema_migrations").int(0, 0) ?? 0
                : 0
            let available = Migration.locateDirectory().flatMap { try? Migration.load(directory: $0) }?.last?.version
            switch (applied, available) {
            case (0, _): report.fail("migrations", "schema pgpush is missing: run `pgpush migrate`")
            case (let applied, let available?) where applied < available:
                report.warn("migrations", "version \(applied) applied, \(available) available: run `pgpush migrate`")
            default: report.ok("migrations", "version \(applied) applied")
            }
        } catch {
            report.fail("database", "\(error)")
        }
    }

    static func checkEndpoint(_ app: AppConfiguration, into report: inout DoctorReport) async {
        let subject = "app \(app.name): APNs"
        do {
            let endpoint = try app.apnsURL.map { url throws in try APNsEndpoint(baseURL: url) }
                ?? APNsEndpoint(environment: app.environment == .production ? .production : .development)
            var identity: ClientIdentity?
            if case .certificate(let file, let password) = app.authentication {
                identity = try ClientIdentity.load(path: file, password: password)
            }
            let client = try HTTP2Client(threadName: "pgpush-doctor")
            defer { client.shutdown() }
            var configuration = HTTP2ClientConfiguration(tls: try ClientTLSContext(extraCAFile: app.caFile, identity: identity))
            configuration.connectTimeout = .seconds(10)
            let started = ContinuousClock.now
            let connection = try await client.connect(host: endpoint.host, port: endpoint.port, configuration: configuration)
            let elapsed = ContinuousClock.now - started
            connection.close()
            report.ok(subject, "TLS + HTTP/2 with \(endpoint) in \(elapsed.formatted(.units(allowed: [.milliseconds])))")
        } catch {
            report.fail(subject, "\(error)")
        }
    }
}

/// The verdict lines `pgpush doctor` prints.
struct DoctorReport: Sendable {
    private(set) var lines: [String] = []
    private(set) var failures = 0

    mutating func ok(_ subject: String, _ detail: String) { lines.append("✔ \(subject): \(detail)") }
    mutating func warn(_ subject: String, _ detail: String) { lines.append("⚠ \(subject): \(detail)") }
    mutating func fail(_ subject: String, _ detail: String) {
        failures += 1
        lines.append("✘ \(subject): \(detail)")
    }

    mutating func append(_ other: DoctorReport) {
        lines += other.lines
        failures += other.failures
    }

    func print() {
        for line in lines { Swift.print(line) }
    }
}

import Locking
