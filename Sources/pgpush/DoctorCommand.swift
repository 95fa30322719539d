import APNsClient
import APNsCore
import FCMClient
import Foundation
import HTTP2TLS
import Locking
import PGPushCore
import Postgres
import PushCrypto
import PushQueue
import PushTransport
import PushWorker

enum DoctorCommand {
    static let help = """
        pgpush doctor — check a worker's configuration before (or while) it runs

        Checks, each with a verdict (✔ ok, ⚠ warning, ✘ failure):
          - the configuration (the same flags, variables and file as `pgpush run`);
          - each app's credentials: the p8 key (readable, P-256, not readable by others) or the
            certificate (password, key match, days until it expires);
          - the database: connection, server version, migrations applied;
          - wake-ups: whether a NOTIFY reaches the worker's LISTEN (not through a transaction
            pooler such as PgBouncer: then PGPUSH_LISTEN_DATABASE_URL), and whether DATABASE_URL
            goes through such a pooler;
          - APNs: a TLS + HTTP/2 handshake with each app's endpoint (certificate verified);
          - APNs credentials: one alert push per app to a made-up device token, 56 zeros then
            d0c7d0c7, sent with apns-expiration 0. APNs answers 400 BadDeviceToken when the key
            (key id, team id) or certificate and the topic are good, 403 (InvalidProviderToken,
            BadCertificate, ...) when they are not; no device ever gets it.
        Secrets never appear in the output.

        Takes every flag of `pgpush run` (see pgpush run --help), and:
          --no-check-apns     do not send the push above (where no outbound push is wanted)
          --check-apns        send it (the default)
        Exit code: 0 when nothing failed (warnings allowed), 1 otherwise, 2 for a configuration error.

        Examples:
          pgpush doctor
          pgpush doctor --config /etc/pgpush/apps.json
          pgpush doctor --no-check-apns
        """

    static let flags = RunCommand.flags.union(["check-apns", "no-check-apns"])
    static let switches: Set<String> = ["help", "check-apns", "no-check-apns"]

    /// The device token of the credentials check. APNs issues tokens as opaque random
    /// bytes, so one that is 28 zero bytes followed by a marker is in practice never a device's; the
    /// marker ("d0c7", doctor) makes it easy to find in a simulator's log or a capture.
    static let madeUpDeviceToken = String(repeating: "0", count: 56) + "d0c7d0c7"

    static func run(_ arguments: Arguments) throws -> Int32 {
        if arguments.isSet("check-apns") && arguments.isSet("no-check-apns") {
            throw UsageError("--check-apns and --no-check-apns contradict each other: give one")
        }
        let asksAPNs = !arguments.isSet("no-check-apns")
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
        checkWakeUps(configuration, into: &report)
        let endpointChecks = Locked(DoctorReport())
        _ = try blockOn {
            for app in configuration.apps {
                var check = DoctorReport()
                if app.fcm != nil {
                    if asksAPNs {
                        await checkFCM(app, into: &check)
                    } else {
                        check.warn("app \(app.name): FCM credentials", "not asked (--no-check-apns): the credentials are unconfirmed")
                    }
                }
                guard app.authentication != nil else {
                    endpointChecks.withLock { $0.append(check) }
                    continue
                }
                let reachable = await checkEndpoint(app, into: &check)
                if !asksAPNs {
                    check.warn("app \(app.name): APNs credentials",
                               "not asked (--no-check-apns): credentials and topic are unconfirmed")
                } else if reachable {
                    await checkCredentialsWithAPNs(app, into: &check)
                } else {
                    // Without a connection the push would only wait out the request timeout.
                    check.fail("app \(app.name): APNs credentials", "not asked: APNs is unreachable (above)")
                }
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
        if let fcm = app.fcm {
            do {
                let sender = try SenderFactory.makeFCMSender(for: app)
                let account = sender.configuration.account
                report.ok("app \(app.name): FCM credentials", "service account \(account.clientEmail) (key \(account.privateKeyID)) "
                          + "from \(fcm.credentialsFile) is a usable RSA key; project \(sender.configuration.projectID)")
            } catch {
                report.fail("app \(app.name): FCM credentials", error.description)
            }
        }
        if let webPush = app.webPush {
            do {
                let sender = try SenderFactory.makeWebPushSender(for: app)
                // What the web app subscribes with: a mismatch makes every push service refuse.
                report.ok("app \(app.name): VAPID key", "\(webPush.vapidKeyFile) is a usable P-256 key; subject "
                          + "\(webPush.vapidSubject); applicationServerKey \(sender.configuration.signer.publicKey); "
                          + "allowed origins \(webPush.allowedOrigins)")
            } catch {
                report.fail("app \(app.name): VAPID key", error.description)
            }
        }
        switch app.authentication {
        case nil:
            break
        case .token(_, let keyID, let keyFile):
            do {
                _ = try SenderFactory.makeClient(for: app)
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

    /// Whether new rows wake the worker at once (NOTIFY reaches its LISTEN), and what a
    /// transaction pooler in front of the database means for it.
    static func checkWakeUps(_ configuration: WorkerConfiguration, into report: inout DoctorReport) {
        let pooled = (try? ConnectionPooling.sharesBackends(configuration.databaseURL)) ?? false
        if pooled {
            report.ok("connection pooling", "DATABASE_URL goes through a transaction pooler (two sessions were served by one "
                      + "server backend): claims, outcomes, migrate and prune work through it (pgpush keeps no session state "
                      + "across transactions); LISTEN does not")
        }
        let setting = configuration.listenDatabaseURL == nil ? "DATABASE_URL" : "PGPUSH_LISTEN_DATABASE_URL"
        do {
            let listening = try PostgresConnection(conninfo: configuration.listenDatabaseURL ?? configuration.databaseURL)
            if try ConnectionPooling.deliversNotifications(to: listening, from: configuration.databaseURL, timeout: .seconds(5)) {
                report.ok("wake-ups", "a NOTIFY reaches a LISTEN through \(setting): new rows wake the worker at once")
            } else {
                let advice = configuration.listenDatabaseURL == nil
                    ? "set PGPUSH_LISTEN_DATABASE_URL to a direct (session) connection to the same database"
                    : "point PGPUSH_LISTEN_DATABASE_URL at PostgreSQL itself, not at a pooler"
                report.warn("wake-ups", "a NOTIFY did not reach a LISTEN through \(setting) within 5 s (a transaction "
                            + "pooler?): the worker finds new rows by polling every second instead; for immediate "
                            + "wake-ups, \(advice)")
            }
        } catch {
            report.fail("wake-ups", "\(setting): \(error)")
        }
    }

    /// Returns whether the handshake succeeded.
    @discardableResult
    static func checkEndpoint(_ app: AppConfiguration, into report: inout DoctorReport) async -> Bool {
        let subject = "app \(app.name): APNs"
        let endpoint: APNsEndpoint
        do {
            endpoint = try app.apnsURL.map { url throws in try APNsEndpoint(baseURL: url) }
                ?? APNsEndpoint(environment: app.environment)
        } catch {
            report.fail(subject, "\(error)")
            return false
        }
        do {
            var identity: ClientIdentity?
            if case .certificate(let file, let password) = app.authentication {
                identity = try ClientIdentity.load(path: file, password: password)
            }
            let client = try HTTP2Client(threadName: "pgpush-doctor")
            defer { client.shutdown() }
            var configuration = HTTP2ClientConfiguration(tls: try ClientTLSContext(extraCAFile: app.caFile, identity: identity))
            configuration.connectTimeout = .seconds(10)
            configuration.proxy = app.proxy
            let started = ContinuousClock.now
            let connection = try await client.connect(host: endpoint.host, port: endpoint.port, configuration: configuration)
            let elapsed = ContinuousClock.now - started
            connection.close()
            // The proxy's description hides its password.
            let path = app.proxy.map { $0.applies(to: endpoint.host) ? " through the proxy \($0)" : " (NO_PROXY: not through \($0))" } ?? ""
            report.ok(subject, "TLS + HTTP/2 with \(endpoint)\(path) in \(elapsed.formatted(.units(allowed: [.milliseconds])))")
            return true
        } catch let error as ConnectError {
            // The same cause and particulars as the worker's apns_connection_failed line.
            if let failure = ConnectionFailure(endpoint: endpoint.hostAndPort, error: error) {
                report.fail(subject, "cannot connect to \(failure.endpoint) (\(failure.cause.rawValue)): \(failure.detail)")
            } else {
                report.fail(subject, "\(error)")
            }
            return false
        } catch {
            report.fail(subject, "\(error)")
            return false
        }
    }

    /// A handshake needs no JWT, and APNs takes any client certificate at the handshake
    /// before judging it: only an answer to a push says whether the credentials and topic
    /// are good. The push goes to `madeUpDeviceToken`, so no device ever receives it.
    static func checkCredentialsWithAPNs(_ app: AppConfiguration, into report: inout DoctorReport) async {
        let subject = "app \(app.name): APNs credentials"
        var probe = app
        probe.connections = 1  // one request needs one connection
        let client: APNsClient
        let request: APNsRequest
        do {
            client = try SenderFactory.makeClient(for: probe)
            let method: AuthenticationMethod = if case .token = app.authentication { .token } else { .certificate }
            // deliverOnce sends apns-expiration 0: should APNs ever take it, it stores nothing.
            request = try PushNotification(id: 0, app: app.name, deviceToken: madeUpDeviceToken,
                                           payload: Array(#"{"aps":{"alert":"pgpush doctor"}}"#.utf8), deliverOnce: true)
                .validated(bundleID: app.bundleID, authentication: method)
        } catch {
            report.fail(subject, "not asked: \(error)")
            return
        }
        let result = await client.send(request)
        let connectError = client.lastConnectError
        await client.shutdown(timeout: .seconds(2))
        let verdict = verdict(on: result, app: app, topic: request.topic, connectError: connectError)
        if verdict.passed { report.ok(subject, verdict.detail) } else { report.fail(subject, verdict.detail) }
    }

    /// What APNs's answer to the made-up token says about the app's credentials and topic.
    static func verdict(on result: Delivery, app: AppConfiguration, topic: String,
                        connectError: String?) -> (passed: Bool, detail: String) {
        let accepted = "APNs accepted the credentials for topic \(topic)"
        if let failure = result.failure {
            // A connection ended by GOAWAY carries APNs's reason: a 403 one is a credential verdict.
            if let reason = failure.serviceReason.flatMap(APNsReason.init(rawValue:)), reason.status == 403 {
                return (false, refusedCredentials(reason.rawValue, app: app, how: "closed the connection (GOAWAY)"))
            }
            var detail = "no answer from APNs: \(failure)"
            if failure.cause == .couldNotConnect, let connectError { detail += " (last connect error: \(connectError))" }
            if case .certificate = app.authentication {
                detail += "; a refused TLS handshake means APNs does not take the certificate: check PGPUSH_CERT_FILE "
                    + "and that it is for the \(app.environment.rawValue) environment"
            }
            return (false, detail)
        }
        let status = result.status ?? 0
        let reason = result.reason ?? ""
        switch (status, APNsReason(rawValue: reason)) {
        case (200..<300, _):
            return (true, "\(accepted) (the endpoint took even a made-up token, as a simulator may)")
        case (400, .badDeviceToken?):
            return (true, "\(accepted) (a made-up token was refused as BadDeviceToken, as expected)")
        case (_, .deviceTokenNotForTopic?), (_, .topicDisallowed?), (_, .badTopic?), (_, .missingTopic?):
            return (false, "APNs refused topic \(topic) (\(reason)): the credentials do not cover it; check the bundle id "
                + "(PGPUSH_TOPIC / --topic) and that the key's team or the certificate is the app's")
        case (403, _):
            return (false, refusedCredentials(reason.isEmpty ? "403 without a reason" : reason, app: app, how: "answered 403"))
        default:
            return (false, "APNs answered \(status) \(reason) to a made-up token instead of 400 BadDeviceToken: "
                + "the credentials are unconfirmed")
        }
    }

    /// A token exchange and a `validate_only` send to a made-up registration token: FCM checks
    /// the access token, the project and the message without delivering anything. Refusing
    /// the made-up token is the expected answer.
    static func checkFCM(_ app: AppConfiguration, into report: inout DoctorReport) async {
        let subject = "app \(app.name): FCM credentials"
        var probe = app
        probe.connections = 1
        let sender: FCMSender
        do {
            sender = try SenderFactory.makeFCMSender(for: probe)
        } catch {
            report.fail(subject, "not asked: \(error)")
            return
        }
        let message: FCMMessage
        do {
            message = try FCMMessage(target: .token(madeUpFCMToken), payload: Array(#"{"data":{"pgpush":"doctor"}}"#.utf8),
                                     priority: nil, timeToLive: nil, deliverOnce: false, collapseID: nil, validateOnly: true)
        } catch {
            report.fail(subject, "\(error)")
            return
        }
        let project = sender.configuration.projectID
        let delivery = await sender.send(message)
        await sender.shutdown()
        switch delivery.verdict {
        case .delivered, .failed(listsTarget: true):
            report.ok(subject, "FCM issued an access token and took a validate_only message for project \(project) "
                      + "(\(delivery.reason.map { "the made-up token was refused as \($0), as expected" } ?? "accepted as valid"))")
        case .paused(_, let reason):
            report.fail(subject, reason)
        default:
            let said = delivery.status.map { "\($0) \(delivery.reason ?? "")" } ?? delivery.failure.map(String.init(describing:)) ?? "?"
            report.fail(subject, "FCM did not confirm the credentials for project \(project): \(said)")
        }
    }

    /// A registration token no device has: FCM refuses it, after checking everything else.
    static let madeUpFCMToken = "pgpush-doctor:" + String(repeating: "x", count: 140)

    /// The refusal, and which settings to check for it; never the JWT or the key.
    static func refusedCredentials(_ reason: String, app: AppConfiguration, how: String) -> String {
        switch app.authentication {
        case nil:
            return "APNs \(how) with \(reason)"
        case .token(let teamID, let keyID, let keyFile):
            var hint = "check that key \(keyID) (PGPUSH_KEY_ID) belongs to team \(teamID) (PGPUSH_TEAM_ID), "
                + "that \(keyFile) (PGPUSH_KEY_FILE) is that key and that it is enabled for APNs"
            if reason.hasPrefix("BadEnvironmentKey") {
                hint = "key \(keyID) is not enabled for the \(app.environment.rawValue) environment: "
                    + "enable it for APNs in that environment or change PGPUSH_APNS_ENV"
            }
            return "APNs \(how) with \(reason): it refused the provider token; \(hint)"
        case .certificate(let file, _):
            return "APNs \(how) with \(reason): it refused the certificate; check that \(file) (PGPUSH_CERT_FILE) "
                + "is the app's APNs certificate, not revoked, and for the \(app.environment.rawValue) environment (PGPUSH_APNS_ENV)"
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
