import Foundation
import HTTP2TLS
import PGPushCore
import PGPushTestSupport
import Postgres
import PushCrypto
import PushWorker
import Testing
import WebPushClient
import WebPushSimulator

/// A worker, a real PostgreSQL and the Web Push simulator over TLS + HTTP/2: every row of the
/// Web Push answers table, from the row inserted to the row's outcome, and endpoints the
/// worker must never call.
struct WebPushWorld {
    let simulator: WebPushSimulator
    let directory: URL
    let key: ES256PrivateKey
    let app: AppConfiguration
    let conninfo: String
    let database: PostgresConnection

    static let subject = "mailto:push-team@example.com"

    init(faults: WebPushSimulatorFaults = WebPushSimulatorFaults(), protocols: ServerProtocols = .h2AndHTTP1,
         allowedOrigins: String? = nil) throws {
        simulator = WebPushSimulator(faults: faults, protocols: protocols)
        let port = try simulator.start()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("webpush-world-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        key = try ES256PrivateKey.generate()
        let file = directory.appendingPathComponent("vapid.pem").path
        try key.writePKCS8(toFile: file)
        chmod(file, 0o600)
        let allowed = try AllowedOrigins(allowedOrigins ?? "https://127.0.0.1:\(port)")
        app = AppConfiguration(name: "default", bundleID: "", caFile: simulator.caCertificatePath, authentication: nil,
                               webPush: AppConfiguration.WebPush(vapidKeyFile: file, vapidSubject: try VAPIDSubject(Self.subject),
                                                                 allowedOrigins: allowed),
                               connections: 2,
                               retry: RetryConfiguration(serverErrorDelay: .milliseconds(100) ... .milliseconds(200),
                                                         tooManyRequestsBaseDelay: .milliseconds(100)))
        conninfo = try TestDatabase.migrated()
        database = try PostgresConnection(conninfo: conninfo)
    }

    func stop() {
        simulator.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A browser subscribed with the app's VAPID key (or `otherKey`'s).
    func subscribe(otherKey: ES256PrivateKey? = nil) throws -> SimulatedSubscription {
        try simulator.mint(applicationServerKey: try (otherKey ?? key).uncompressedPublicKey())
    }

    @discardableResult
    func insert(_ subscription: SimulatedSubscription, payload: String = #"{"title": "Hi", "body": "there"}"#,
                collapseID: String? = nil) throws -> Int64 {
        try insert(subscriptionJSON: subscription.json(origin: simulator.origin ?? ""), payload: payload, collapseID: collapseID)
    }

    @discardableResult
    func insert(subscriptionJSON: String, payload: String = "{}", collapseID: String? = nil) throws -> Int64 {
        try database.query("""
            INSERT INTO pgpush.notifications (service, subscription, payload, collapse_id)
            VALUES ('webpush', $1, $2, $3) RETURNING id
            """, [subscriptionJSON, payload, collapseID]).int64(0, 0) ?? 0
    }

    /// Runs a worker until `done` holds for the database (looked at, not waited out), then stops it.
    func run(until done: @escaping (PostgresConnection) throws -> Bool, log: Log = Log(minimum: .error)) async throws -> Bool {
        let worker = try Worker(configuration: WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: "webpush-w"),
                                senders: try SenderFactory.makeSenders(for: [app]), log: log)
        let running = Task { try await worker.run() }
        let reached = try await eventually(timeout: .seconds(180)) { try done(database) }
        worker.stop()
        try await running.value
        return reached
    }

    func row(_ id: Int64) throws -> (status: String?, reason: String?, messageID: String?, attempts: Int?) {
        let row = try database.query("SELECT status, last_reason, message_id, attempts FROM pgpush.notifications WHERE id = $1", [id])
        return (row.string(0, 0), row.string(0, 1), row.string(0, 2), row.int(0, 3))
    }

    func unfinished() throws -> Int {
        try database.query("SELECT count(*) FROM pgpush.notifications WHERE status IN ('queued', 'sending')").int(0, 0) ?? -1
    }
}

@Suite struct WebPushDeliveryTests {
    /// The newcomer's path: a VAPID key and subject, rows with subscriptions, and the push
    /// service reads exactly each payload's compact JSON text.
    @Test("2xx: delivered, message_id from Location, the browser reads the compact payload")
    func delivered() async throws {
        let world = try WebPushWorld()
        defer { world.stop() }
        let payloads = [#"{"title": "Hi", "body": "there", "n": [1, 2]}"#, #""just text""#, "[true, null, 1.5]"]
        var ids: [Int64] = []
        for payload in payloads { ids.append(try world.insert(try world.subscribe(), payload: payload, collapseID: "news")) }
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        for id in ids {
            let row = try world.row(id)
            #expect(row.status == "delivered" && row.attempts == 1, "\(row)")
            #expect(row.messageID?.hasPrefix("\(world.simulator.origin ?? "?")/message/") == true, "\(row)")
        }
        let report = world.simulator.report()
        #expect(report.delivered == 3 && report.refusals.isEmpty, "\(report)")
        // The payload as the row holds it (jsonb keeps an object's keys in its own order), compact.
        let stored = try world.database.query("SELECT payload::text FROM pgpush.notifications ORDER BY id")
        let compact = try (0..<stored.rowCount).map {
            String(decoding: try JSONScanner.scan(Array((stored.string($0, 0) ?? "").utf8), compacting: true, buildingValue: false).compact,
                   as: UTF8.self)
        }
        #expect(compact.first == #"{"n":[1,2],"body":"there","title":"Hi"}"#)
        #expect(Set(report.deliveredPayloads) == Set(compact))
    }

    /// Apple's web push service answers HTTP/1.1 unless asked for h2; others may speak only
    /// HTTP/1.1. The same rows are delivered, one request at a time on each kept-alive connection.
    @Test("a push service that speaks only HTTP/1.1: the same rows delivered, the same answers")
    func deliveredOverHTTP1() async throws {
        var faults = WebPushSimulatorFaults()
        faults.firstAnswers = [503]
        let world = try WebPushWorld(faults: faults, protocols: .http1)
        defer { world.stop() }
        let dropped = try world.subscribe()
        world.simulator.drop(dropped)
        let gone = try world.insert(dropped)
        var ids: [Int64] = []
        for index in 0..<40 { ids.append(try world.insert(try world.subscribe(), payload: #"{"n": \#(index)}"#)) }
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        for id in ids {
            let row = try world.row(id)
            #expect(row.status == "delivered" && row.messageID?.contains("/message/") == true, "\(row)")
        }
        #expect(try world.row(gone).reason == "SubscriptionGone")
        let report = world.simulator.report()
        #expect(report.delivered == 40 && Set(report.deliveredPayloads) == Set((0..<40).map { #"{"n":\#($0)}"# }))
        #expect(report.refusals["Scripted503"] == 1)
    }

    @Test("404, 410: failed SubscriptionGone, the endpoint listed; the next row to it is not sent")
    func goneSubscription() async throws {
        let world = try WebPushWorld()
        defer { world.stop() }
        let dropped = try world.subscribe()
        world.simulator.drop(dropped)
        let first = try world.insert(dropped)
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        #expect(try world.row(first).status == "failed" && world.row(first).reason == "SubscriptionGone")
        let listed = try world.database.query("SELECT service, device_token FROM pgpush.invalid_tokens")
        #expect(listed.rowCount == 1 && listed.string(0, 0) == "webpush"
                && listed.string(0, 1) == dropped.json(origin: world.simulator.origin ?? "").split(separator: "\"")[3].description)
        let second = try world.insert(dropped)
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        #expect(try world.row(second).reason == "KnownInvalidToken")
        #expect(world.simulator.report().requests == 1)
    }

    @Test("403 or another VAPID key: failed VapidKeyMismatch, nothing listed, other rows delivered")
    func keyMismatch() async throws {
        var faults = WebPushSimulatorFaults()
        faults.firstAnswers = [403]
        let world = try WebPushWorld(faults: faults)
        defer { world.stop() }
        let forbidden = try world.insert(try world.subscribe())
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        let otherKey = try world.insert(try world.subscribe(otherKey: try ES256PrivateKey.generate()))
        let fine = try world.insert(try world.subscribe())
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        #expect(try world.row(forbidden).reason == "VapidKeyMismatch")
        #expect(try world.row(otherKey).status == "failed" && world.row(otherKey).reason == "VapidKeyMismatch")
        #expect(try world.row(fine).status == "delivered")
        #expect(try world.database.query("SELECT count(*) FROM pgpush.invalid_tokens").int(0, 0) == 0)
        #expect(world.simulator.report().refusals == ["Scripted403": 1, "VapidPkHashMismatch": 1])
    }

    /// Most answers from one origin refusing the key: the app's VAPID key is likely not the one
    /// its web app subscribes with, and that origin's health says so.
    @Test("mostly another VAPID key at an origin: app_health says LikelyWrongVAPIDKey for that origin")
    func mostlyAnotherKeyFlagsTheOrigin() async throws {
        let world = try WebPushWorld()
        defer { world.stop() }
        let otherKey = try ES256PrivateKey.generate()
        for _ in 0..<60 { try world.insert(try world.subscribe(otherKey: otherKey)) }
        #expect(try await world.run { database in
            try world.unfinished() == 0 && database.query("""
                SELECT count(*) FROM pgpush.app_health
                 WHERE service = 'webpush' AND topic = $1 AND NOT healthy AND reason = 'LikelyWrongVAPIDKey'
                """, [world.simulator.origin]).int(0, 0) == 1
        })
        #expect(try world.database.query("SELECT count(*) FROM pgpush.notifications WHERE last_reason = 'VapidKeyMismatch'")
            .int(0, 0) == 60)
    }

    @Test("400, 413, other 4xx: failed with pgpush's reason, the service's in delivery_errors")
    func refusedRows() async throws {
        var faults = WebPushSimulatorFaults()
        faults.firstAnswers = [400, 413, 406]
        let world = try WebPushWorld(faults: faults)
        defer { world.stop() }
        let subscription = try world.subscribe()
        // One at a time, so that each answer goes to a known row.
        var reasons: [String?] = []
        for _ in 0..<3 {
            let id = try world.insert(subscription)
            #expect(try await world.run { _ in try world.unfinished() == 0 })
            reasons.append(try world.row(id).reason)
        }
        #expect(reasons == ["BadRequest", "PayloadTooLarge", "Refused"])
        let details = try world.database.query("SELECT detail FROM pgpush.delivery_errors ORDER BY id")
        #expect((0..<details.rowCount).map { details.string($0, 0) } == ["Scripted400", "Scripted413", "Scripted406"])
    }

    @Test("401: the origin paused for the app, the row queued uncounted, sent after the pause")
    func refusedToken() async throws {
        var faults = WebPushSimulatorFaults()
        faults.firstAnswers = [401]
        let world = try WebPushWorld(faults: faults)
        defer { world.stop() }
        let id = try world.insert(try world.subscribe())
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        let row = try world.row(id)
        // Delivered after the pause, the refused request not counted as an attempt.
        #expect(row.status == "delivered" && row.attempts == 1, "\(row)")
        #expect(world.simulator.report().refusals["Scripted401"] == 1)
        // The origin's health row exists only because the 401 paused it; the probe after the
        // pause resumed it.
        let health = try world.database.query("""
            SELECT healthy, reason FROM pgpush.app_health WHERE service = 'webpush' AND topic = $1
            """, [world.simulator.origin])
        #expect(health.rowCount == 1 && health.bool(0, 0) == true, "\(health.rowCount)")
        let reason = health.string(0, 1)
        #expect(reason == nil, "health after the probe: \(reason ?? "")")
    }

    @Test("429, 5xx: retried after Retry-After, then delivered")
    func throttledAndServerTrouble() async throws {
        var faults = WebPushSimulatorFaults()
        faults.firstAnswers = [429, 503, 500]
        let world = try WebPushWorld(faults: faults)
        defer { world.stop() }
        let id = try world.insert(try world.subscribe())
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        let row = try world.row(id)
        #expect(row.status == "delivered", "\(row)")
        let errors = try world.database.query("SELECT reason FROM pgpush.delivery_errors ORDER BY id")
        #expect((0..<errors.rowCount).map { errors.string($0, 0) } == ["TooManyRequests", "ServerError", "ServerError"])
        #expect(world.simulator.report().requests == 4)
    }

    /// A row names the host the worker calls: one outside the allow-list, an `http` URL, an
    /// address literal, or an allowed name that resolves into a private range fails
    /// `EndpointNotAllowed`, and nothing connects to it (a listener there counts connects).
    @Test("an endpoint not allowed: failed EndpointNotAllowed, no connection attempted")
    func endpointNotAllowed() async throws {
        let listener = try SilentListener()
        defer { listener.close() }
        // localhost is allowed by name, but resolves only to loopback.
        let world = try WebPushWorld(allowedOrigins: "https://localhost:\(listener.port)")
        defer { world.stop() }
        let keys = #""keys":{"p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4","auth":"BTBZMqHH6r4Tts7J_aSIgg"}"#
        let endpoints = ["https://127.0.0.1:\(listener.port)/push/x", "https://localhost:\(listener.port)/push/x",
                         "https://internal.example:\(listener.port)/push/x", "https://[::1]:\(listener.port)/push/x"]
        let ids = try endpoints.map { try world.insert(subscriptionJSON: #"{"endpoint":"\#($0)",\#(keys)}"#) }
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        for (id, endpoint) in zip(ids, endpoints) {
            #expect(try world.row(id).status == "failed" && world.row(id).reason == "EndpointNotAllowed", "\(endpoint)")
        }
        #expect(listener.takeConnections() == 0)
        let detail = try world.database.query("SELECT detail FROM pgpush.delivery_errors WHERE notification_id = $1", [ids[1]])
        #expect(detail.string(0, 0)?.contains("not permitted") == true, "\(detail.string(0, 0) ?? "")")
    }
}
