import APNsSimulator
import Foundation
import FCMSimulator
import WebPushClient
import WebPushSimulator
import Locking
import PGPushCore
import PGPushOperator
import Postgres
import PushCrypto
import PushQueue
import PushWorker
import Synchronization

/// Settings of one demo run; the defaults are what `pgpush demo` uses.
package struct DemoOptions: Sendable {
    package var conninfo: String
    /// Every demo row is enqueued under this app, and only its rows are reported.
    package var app = "demo"
    package var bundleID = "com.example.demo"
    /// Two connections at 100/s: slow enough that the rate limit shows in the simulator's report.
    package var connections = 2
    package var ratePerConnection = RateCap.standardPerConnection
    /// Retries in fractions of a second instead of the production 1–5 s, so the demo ends in seconds.
    package var retry = DemoOptions.fastRetries
    package var timeout: Duration = .seconds(120)
    package var progressInterval: Duration = .milliseconds(200)
    package var workerLog = Log(minimum: .error)

    package init(conninfo: String) {
        self.conninfo = conninfo
    }

    package static var fastRetries: RetryConfiguration {
        var retry = RetryConfiguration.default
        retry.serverErrorDelay = .milliseconds(200) ... .milliseconds(800)
        retry.tooManyRequestsBaseDelay = .milliseconds(250)
        retry.tooManyRequestsMaximumDelay = .seconds(2)
        return retry
    }
}

/// One demo: a simulator with a fresh p8 key and CA, the scenario's rows enqueued
/// through `pgpush.enqueue` / `enqueue_many`, a worker until every row is finished,
/// then what happened. Uses only the database it is given, and only its own app's rows.
package final class DemoRun: Sendable {
    package let scenario: DemoScenario
    package let options: DemoOptions
    private let stopRequested = Atomic<Bool>(false)
    private let activeWorker = Locked<Worker?>(nil)
    private let workingDirectory = Locked<String?>(nil)

    static let teamID = "DEMOTEAM01"
    static let keyID = "DEMOKEY001"

    package init(scenario: DemoScenario, options: DemoOptions) {
        self.scenario = scenario
        self.options = options
    }

    /// Ends the run early (Ctrl-C): the worker drains and `run` returns what it has.
    package func stop() {
        stopRequested.store(true, ordering: .sequentiallyConsistent)
        activeWorker.withLock { $0 }?.stop()
    }

    package var wasStopped: Bool { stopRequested.load(ordering: .sequentiallyConsistent) }

    /// Removes the key, the CA and the certificates now, for an exit that cannot wait for `run` to return.
    package func removeTemporaryFiles() {
        if let directory = workingDirectory.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// `narrate` gets one line per step (simulator up, rows enqueued, worker started); `progress`
    /// is called about every `options.progressInterval` with the counts and the seconds since the start.
    package func run(narrate: @Sendable (String) -> Void = { _ in },
                    progress: @Sendable (DemoProgress, Double) -> Void = { _, _ in }) async throws -> DemoResult {
        let started = ContinuousClock.now
        func elapsed() -> Double {
            let duration = ContinuousClock.now - started
            return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
        let directory = try Self.makeTemporaryDirectory()
        workingDirectory.withLock { $0 = directory }
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            workingDirectory.withLock { $0 = nil }
        }

        let key = try ES256PrivateKey.generate()
        let keyFile = directory + "/AuthKey_\(Self.keyID).p8"
        try key.writePKCS8(toFile: keyFile)
        var simulatorConfiguration = SimulatorConfiguration(authentication: .token(
            ProviderTokenKey(teamID: Self.teamID, keyID: Self.keyID, publicKey: try key.publicKey())))
        simulatorConfiguration.serverCertificate = .generated(caOutputPath: directory + "/simulator-ca.pem")
        simulatorConfiguration.bundleID = options.bundleID
        simulatorConfiguration.faults = scenario.faults
        let simulator = try APNsSimulator(configuration: simulatorConfiguration)
        _ = try simulator.start()
        defer { simulator.stop() }
        narrate("APNs simulator listening on \(simulator.baseURL ?? "?") (fresh p8 key and TLS CA in \(directory))")

        // The same app reaches Android through FCM: a fresh service account the FCM simulator trusts.
        var fcmSimulator: FCMSimulator?
        var fcm: AppConfiguration.FCM?
        var caFile = simulator.caCertificatePath
        if scenario.usesFCM {
            let started = try Self.startFCM(in: directory, unregistered: scenario.unregisteredFCMTokens)
            fcmSimulator = started.simulator
            fcm = started.settings
            narrate("FCM simulator listening on \(started.simulator.baseURL ?? "?") (fresh service account for project "
                    + "\(Self.fcmProject))")
        }
        defer { fcmSimulator?.stop() }

        // And web browsers through their push service: a fresh VAPID key, a subscription per browser.
        var webPushSimulator: WebPushSimulator?
        var webPush: AppConfiguration.WebPush?
        /// Each browser of the scenario, and its subscription.
        var subscriptions: [String: String] = [:]
        if scenario.usesWebPush {
            let started = try Self.startWebPush(in: directory, scenario: scenario)
            webPushSimulator = started.simulator
            webPush = started.settings
            subscriptions = started.subscriptions
            narrate("Web Push simulator listening on \(started.simulator.origin ?? "?") (fresh VAPID key, "
                    + "\(started.subscriptions.count) browser subscriptions made for it)")
        }
        defer { webPushSimulator?.stop() }
        // One trust file for every simulator, as PGPUSH_CA_FILE is one setting for every service.
        let authorities = [simulator.caCertificatePath, fcmSimulator?.caCertificatePath, webPushSimulator?.caCertificatePath]
            .compactMap { $0 }
        if authorities.count > 1 {
            caFile = directory + "/simulators-ca.pem"
            let bundle = try authorities.map { try String(contentsOfFile: $0, encoding: .utf8) }.joined(separator: "\n")
            try bundle.write(toFile: caFile ?? "", atomically: true, encoding: .utf8)
        }

        let database = try PostgresConnection(conninfo: options.conninfo)
        var channel: String?
        let app = AppConfiguration(
            name: options.app, bundleID: options.bundleID, environment: .development, apnsURL: simulator.baseURL,
            caFile: caFile, authentication: .token(teamID: Self.teamID, keyID: Self.keyID, keyFile: keyFile), fcm: fcm,
            webPush: webPush, connections: options.connections, ratePerConnection: options.ratePerConnection)
        var channels: ChannelManagement?
        if scenario.usesChannel {
            // The simulator serves the channel management API on its one port too.
            let client = try SenderFactory.makeChannelManagementClient(for: app, channelsURL: simulator.baseURL)
            let management = ChannelManagement(
                appName: app.name, environment: app.environment, client: client,
                database: database)
            channel = try await management.create(storesMessages: true).channelID
            channels = management
            narrate("created broadcast channel \(channel ?? "") with the channel management API (recorded in pgpush.channels)")
        }
        defer { channels?.client.close() }
        var labels: [Int64: (String, DemoScenario.Expectation)] = [:]
        var waiting: [DemoScenario.Batch] = []
        for batch in scenario.batches {
            guard batch.after == nil else {
                waiting.append(batch)
                continue
            }
            for id in try enqueue(batch, channel: channel, subscriptions: subscriptions, on: database) {
                labels[id] = (batch.label, batch.expectation)
            }
        }
        narrate("enqueued \(labels.count) notifications for app \"\(options.app)\" with pgpush.enqueue and pgpush.enqueue_many"
                + (waiting.isEmpty ? "" : "; \(waiting.count) more once the rows they follow have ended"))

        var configuration = WorkerConfiguration(databaseURL: options.conninfo, apps: [app],
                                                workerID: "demo-\(ProcessInfo.processInfo.hostName)-\(getpid())")
        configuration.apps[0].retry = options.retry
        configuration.pollInterval = .milliseconds(100)
        configuration.drainTimeout = .seconds(5)
        let worker = try Worker(configuration: configuration, senders: try SenderFactory.makeSenders(for: [app]),
                                log: options.workerLog)
        narrate("worker started: \(options.connections) connections × \(options.ratePerConnection) requests/s, "
                + "fast retries for the demo (5xx after \(Self.milliseconds(options.retry.serverErrorDelay.lowerBound))–"
                + "\(Self.milliseconds(options.retry.serverErrorDelay.upperBound)) ms, "
                + "429 from \(Self.milliseconds(options.retry.tooManyRequestsBaseDelay)) ms)")
        activeWorker.withLock { $0 = worker }
        if wasStopped { worker.stop() }
        let workerEnded = Atomic<Bool>(false)
        let running = Task {
            defer { workerEnded.store(true, ordering: .sequentiallyConsistent) }
            try await worker.run()
        }

        var snapshot: StatusSnapshot?
        let deadline = ContinuousClock.now + options.timeout
        while true {
            waiting = try enqueueFollowers(waiting, channel: channel, subscriptions: subscriptions, labels: &labels, on: database)
            let ids = labels.keys.sorted()
            let current = try Self.progress(of: ids, on: database, waiting: waiting.reduce(0) { $0 + $1.rowCount })
            progress(current, elapsed())
            if current.isFinished {
                // Publish the worker's counters now rather than at its next 5 s heartbeat,
                // so worker_health in the report matches what just happened.
                _ = try? NotificationQueue(connection: database, workerID: configuration.workerID).heartbeat(worker.statistics)
                snapshot = try StatusSnapshot.load(from: database, app: options.app)
                break
            }
            if wasStopped || ContinuousClock.now >= deadline || workerEnded.load(ordering: .sequentiallyConsistent) { break }
            try await Task.sleep(for: options.progressInterval)
        }
        worker.stop()
        try await running.value
        activeWorker.withLock { $0 = nil }

        var deletedChannel: ChannelRecord?
        if let channels, let channel {
            // The event is over: Apple asks for channels to be deleted when they are no longer needed.
            deletedChannel = try await channels.delete(channel)
            narrate("deleted broadcast channel \(channel) (pgpush.channels keeps it, marked deleted)")
        }
        let rows = try Self.rows(labels.keys.sorted(), labels: labels, on: database)
        var result = DemoResult(rows: rows, snapshot: snapshot, simulator: simulator.report(), fcm: fcmSimulator?.report(),
                                webPush: webPushSimulator?.report(),
                                elapsedSeconds: elapsed(), interrupted: wasStopped, ratePerConnection: options.ratePerConnection,
                                channel: deletedChannel)
        result.overtaking = try Self.overtaking(labels, on: database)
        return result
    }

    /// The demo's Firebase project.
    static let fcmProject = "pgpush-demo"

    /// The FCM simulator with a fresh service account, and the app's FCM settings for it.
    private static func startFCM(in directory: String,
                                 unregistered: [String]) throws -> (simulator: FCMSimulator, settings: AppConfiguration.FCM) {
        let key = try RS256PrivateKey.generate()
        let email = "pgpush-demo@\(fcmProject).iam.gserviceaccount.com"
        let keyID = "0d3e0d3e0d3e0d3e0d3e0d3e0d3e0d3e0d3e0d3e"
        var configuration = FCMSimulatorConfiguration(projectID: fcmProject, clientEmail: email, privateKeyID: keyID,
                                                      publicKey: try key.publicKey())
        for token in unregistered { configuration.tokenFates[token] = .unregistered }
        let simulator = FCMSimulator(configuration: configuration)
        let port = try simulator.start()
        let file = directory + "/service-account.json"
        let fields: [String: String] = [
            "type": "service_account", "project_id": fcmProject, "private_key_id": keyID, "private_key": try key.pkcs8PEM(),
            "client_email": email, "token_uri": "https://127.0.0.1:\(port)/token",
        ]
        let data = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        guard FileManager.default.createFile(atPath: file, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw DemoError("could not write the demo's service account file")
        }
        return (simulator, AppConfiguration.FCM(credentialsFile: file, url: "https://127.0.0.1:\(port)"))
    }

    /// The Web Push simulator with a fresh VAPID key, a subscription for each browser of the
    /// scenario (those it unsubscribes dropped), and the app's Web Push settings for it.
    private static func startWebPush(in directory: String, scenario: DemoScenario) throws
        -> (simulator: WebPushSimulator, settings: AppConfiguration.WebPush, subscriptions: [String: String]) {
        let key = try ES256PrivateKey.generate()
        let file = directory + "/vapid.pem"
        try key.writePKCS8(toFile: file)
        let simulator = WebPushSimulator()
        try simulator.start()
        guard let origin = simulator.origin else { throw DemoError("the Web Push simulator did not start") }
        let applicationServerKey = try key.uncompressedPublicKey()
        var subscriptions: [String: String] = [:]
        for browser in Set(scenario.batches.filter { $0.service == "webpush" }.flatMap(\.tokens)) {
            let subscription = try simulator.mint(applicationServerKey: applicationServerKey)
            if scenario.unsubscribedBrowsers.contains(browser) { simulator.drop(subscription) }
            subscriptions[browser] = subscription.json(origin: origin)
        }
        let settings = AppConfiguration.WebPush(vapidKeyFile: file, vapidSubject: try VAPIDSubject("mailto:demo@example.com"),
                                                allowedOrigins: try AllowedOrigins(origin))
        return (simulator, settings, subscriptions)
    }

    /// Enqueues each waiting batch whose predecessor's rows have all ended; returns the rest.
    private func enqueueFollowers(_ waiting: [DemoScenario.Batch], channel: String?, subscriptions: [String: String],
                                  labels: inout [Int64: (String, DemoScenario.Expectation)],
                                  on database: PostgresConnection) throws -> [DemoScenario.Batch] {
        try waiting.filter { batch in
            let predecessors = labels.filter { $0.value.0 == batch.after }.map(\.key)
            let open = try database.query("""
                SELECT count(*) FROM pgpush.notifications WHERE id = ANY($1) AND status IN ('queued', 'sending')
                """, [predecessors])
            guard open.int(0, 0) == 0 else { return true }
            for id in try enqueue(batch, channel: channel, subscriptions: subscriptions, on: database) {
                labels[id] = (batch.label, batch.expectation)
            }
            return false
        }
    }

    /// `channel`: the demo's broadcast channel, for channel batches and the placeholder in payloads;
    /// `subscriptions`: each browser's subscription, for Web Push batches.
    private func enqueue(_ batch: DemoScenario.Batch, channel: String?, subscriptions: [String: String],
                         on database: PostgresConnection) throws -> [Int64] {
        let arguments = """
            payload => $2::jsonb, app => $3, push_type => $4, collapse_id => $5,
            expires_at => now() + $6::float8 * interval '1 second',
            send_after => coalesce(now() + $7::float8 * interval '1 second', now()), service => $8, lane => $9
            """
        let payload = batch.payload.replacingOccurrences(of: DemoScenario.channelPlaceholder, with: channel ?? "")
        let rest: [(any PostgresParameter)?] = [payload, options.app, batch.pushType, batch.collapseID,
                                                batch.expiresIn, batch.sendAfter, batch.service, batch.lane]
        let result: PostgresResult
        if batch.service == "webpush" {
            let browsers = try batch.tokens.map { browser in
                guard let subscription = subscriptions[browser] else { throw DemoError("no subscription for \(browser)") }
                return subscription
            }
            result = try database.query("""
                SELECT pgpush.enqueue_many(subscriptions => $1::jsonb, payload => $2::jsonb, app => $3, collapse_id => $4)
                """, ["[" + browsers.joined(separator: ",") + "]", payload, options.app, batch.collapseID])
        } else if let topic = batch.topic {
            result = try database.query("""
                SELECT pgpush.enqueue(channel_id => $1, payload => $2::jsonb, app => $3, service => $4)
                """, [topic, payload, options.app, batch.service])
        } else if batch.toChannel {
            guard let channel else { throw DemoError("a channel batch without a channel") }
            // Priority 5: score updates need not wake the device, and do not count against
            // the activity's budget of priority-10 updates. A broadcast has no collapse id.
            result = try database.query("""
                SELECT pgpush.enqueue(channel_id => $1, payload => $2::jsonb, app => $3, push_type => $4, priority => 5)
                """, [channel, payload, options.app, batch.pushType])
        } else if batch.tokens.count == 1 {
            result = try database.query("SELECT pgpush.enqueue(device_token => $1, \(arguments))", [batch.tokens[0] as (any PostgresParameter)?] + rest)
        } else {
            result = try database.query("SELECT pgpush.enqueue_many(device_tokens => $1, \(arguments))", [batch.tokens as (any PostgresParameter)?] + rest)
        }
        return (0..<result.rowCount).compactMap { result.int64($0, 0) }
    }

    /// `waiting`: rows not enqueued yet (they follow others), shown as queued.
    static func progress(of ids: [Int64], on database: PostgresConnection, waiting: Int = 0) throws -> DemoProgress {
        let result = try database.query("SELECT status, count(*) FROM pgpush.notifications WHERE id = ANY($1) GROUP BY 1", [ids])
        var counts: [String: Int] = [:]
        for row in 0..<result.rowCount { counts[result.string(row, 0) ?? "?"] = result.int(row, 1) ?? 0 }
        if waiting > 0 { counts["queued", default: 0] += waiting }
        return DemoProgress(total: ids.count + waiting, counts: counts)
    }

    static func rows(_ ids: [Int64], labels: [Int64: (String, DemoScenario.Expectation)],
                     on database: PostgresConnection) throws -> [DemoRow] {
        let result = try database.query("""
            SELECT id, coalesce(device_token, channel_id, subscription ->> 'endpoint'), push_type, status, attempts, last_status,
                   last_reason
              FROM pgpush.notifications WHERE id = ANY($1) ORDER BY id
            """, [ids])
        return (0..<result.rowCount).compactMap { row in
            guard let id = result.int64(row, 0), let (label, expectation) = labels[id] else { return nil }
            return DemoRow(id: id, label: label, token: result.string(row, 1) ?? "", pushType: result.string(row, 2) ?? "",
                           status: result.string(row, 3) ?? "", attempts: result.int(row, 4) ?? 0,
                           lastStatus: result.int(row, 5), lastReason: result.string(row, 6), expectation: expectation)
        }
    }

    /// The campaign's rows, all enqueued before the one-time code, and how many of them were
    /// sent after it (finished later: the outcome is written once its answer came).
    static func overtaking(_ labels: [Int64: (String, DemoScenario.Expectation)],
                           on database: PostgresConnection) throws -> DemoResult.Overtaking? {
        let campaign = labels.filter { $0.value.0 == DemoScenario.campaignLabel }.map(\.key)
        guard let code = labels.first(where: { $0.value.0 == DemoScenario.urgentLabel })?.key, !campaign.isEmpty else { return nil }
        let later = try database.query("""
            SELECT count(*) FROM pgpush.notifications
             WHERE id = ANY($1) AND finished_at > (SELECT finished_at FROM pgpush.notifications WHERE id = $2)
            """, [campaign, code]).int(0, 0) ?? 0
        return DemoResult.Overtaking(campaignRows: campaign.count, sentAfterTheCode: later)
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    private static func makeTemporaryDirectory() throws -> String {
        var template = Array("/tmp/pgpush-demo-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw DemoError("could not create a temporary folder (errno \(errno))") }
        return String(cString: created)
    }
}
