import FCMClient
import FCMSimulator
import Locking
import Foundation
import PGPushCore
import PGPushTestSupport
import Postgres
import PushCrypto
import PushWorker
import Testing

/// A worker, a real PostgreSQL and the FCM simulator over TLS + HTTP/2: every row of the FCM
/// answers table, from the row inserted to the row's outcome.
struct FCMWorld {
    let simulator: FCMSimulator
    let directory: URL
    let app: AppConfiguration
    let conninfo: String
    let database: PostgresConnection

    static let project = "example-project"
    static let email = "pgpush-sender@example-project.iam.gserviceaccount.com"
    static let keyID = "4b1d0c3f5e6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c"
    static let message = #"{"notification":{"title":"Hi","body":"there"},"data":{"k":"v"}}"#

    /// `apns`: the app also has APNs credentials (for the APNs simulator at that URL).
    init(_ adjust: (inout FCMSimulatorConfiguration) -> Void = { _ in }) throws {
        let key = try RS256PrivateKey.generate()
        var configuration = FCMSimulatorConfiguration(projectID: Self.project, clientEmail: Self.email,
                                                      privateKeyID: Self.keyID, publicKey: try key.publicKey())
        adjust(&configuration)
        simulator = FCMSimulator(configuration: configuration)
        let port = try simulator.start()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-world-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("service-account.json").path
        let fields: [String: Any] = [
            "type": "service_account", "project_id": Self.project, "private_key_id": Self.keyID, "private_key": try key.pkcs8PEM(),
            "client_email": Self.email, "token_uri": "https://127.0.0.1:\(port)/token",
        ]
        try JSONSerialization.data(withJSONObject: fields).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o600)
        app = AppConfiguration(name: "default", bundleID: "", caFile: simulator.caCertificatePath, authentication: nil,
                               fcm: AppConfiguration.FCM(credentialsFile: file, url: "https://127.0.0.1:\(port)"),
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

    @discardableResult
    func insert(token: String? = nil, topic: String? = nil, payload: String = message, priority: Int? = nil,
                service: String = "fcm") throws -> Int64 {
        try database.query("""
            INSERT INTO pgpush.notifications (service, device_token, channel_id, payload, priority)
            VALUES ($1, $2, $3, $4, $5) RETURNING id
            """, [service, token, topic, payload, priority]).int64(0, 0) ?? 0
    }

    /// Runs a worker until `done` holds for the database (looked at, not waited out), then stops it.
    func run(until done: @escaping (PostgresConnection) throws -> Bool, log: Log = Log(minimum: .error)) async throws -> Bool {
        let senders = try SenderFactory.makeSenders(for: [app])
        let worker = try Worker(configuration: WorkerConfiguration(databaseURL: conninfo, apps: [app], workerID: "fcm-w"),
                                senders: senders, log: log)
        let running = Task { try await worker.run() }
        let reached = try await eventually { try done(database) }
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

@Suite struct FCMDeliveryTests {
    static let token = "fGx3Y-kQR0u:APA91bH" + String(repeating: "Zq9_", count: 30)

    @Test("200: delivered with message_id, token and topic rows, Android fields derived from the row")
    func delivered() async throws {
        let world = try FCMWorld()
        defer { world.stop() }
        let toToken = try world.insert(token: Self.token, priority: 10)
        let toTopic = try world.insert(topic: "news")
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        for id in [toToken, toTopic] {
            let row = try world.row(id)
            #expect(row.status == "delivered")
            #expect(row.messageID?.hasPrefix("projects/\(FCMWorld.project)/messages/0:") == true, "\(row)")
        }
        let report = world.simulator.report()
        #expect(report.delivered == 2)
        // One access token for both rows, fetched once.
        #expect(report.tokenRequests == 1)
        let sent = report.deliveredMessages.joined()
        #expect(sent.contains(#""token":"\#(Self.token)""#) && sent.contains(#""topic":"news""#))
        #expect(sent.contains(#""android":{"priority":"HIGH"}"#), "\(sent)")
    }

    @Test("UNREGISTERED, an invalid token and SENDER_ID_MISMATCH: failed, token listed for FCM; other INVALID_ARGUMENT: failed with FCM's message")
    func refusedRows() async throws {
        let gone = Self.token + "-gone", invalid = Self.token + "-invalid", foreign = Self.token + "-foreign"
        let world = try FCMWorld {
            $0.tokenFates = [gone: .unregistered, invalid: .invalid, foreign: .senderIDMismatch]
        }
        defer { world.stop() }
        let ids = try [gone, invalid, foreign].map { try world.insert(token: $0) }
        let bad = try world.insert(token: Self.token, payload: #"{"notification":"not an object"}"#)
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        let reasons = try ids.map { try world.row($0).reason }
        #expect(reasons == ["UNREGISTERED", "INVALID_ARGUMENT", "SENDER_ID_MISMATCH"])
        for id in ids { #expect(try world.row(id).status == "failed") }
        let listed = try world.database.query("SELECT service, device_token FROM pgpush.invalid_tokens ORDER BY device_token")
        #expect(listed.rowCount == 3)
        #expect((0..<listed.rowCount).allSatisfy { listed.string($0, 0) == "fcm" })
        #expect(Set((0..<listed.rowCount).compactMap { listed.string($0, 1) }) == [gone, invalid, foreign])
        #expect(try world.row(bad).status == "failed" && world.row(bad).reason == "INVALID_ARGUMENT")
        // Failed at the first answer: no retry, one attempt, one error row.
        let attempts = try world.database.query("""
            SELECT n.attempts, (SELECT count(*) FROM pgpush.delivery_errors e WHERE e.notification_id = n.id)
              FROM pgpush.notifications n WHERE n.id = $1
            """, [bad])
        #expect(attempts.int(0, 0) == 1 && attempts.int(0, 1) == 1, "attempts \(attempts.int(0, 0) ?? -1), errors \(attempts.int(0, 1) ?? -1)")
        let detail = try world.database.query("SELECT detail, service FROM pgpush.delivery_errors WHERE notification_id = $1", [bad])
        #expect(detail.string(0, 0)?.contains("message.notification") == true && detail.string(0, 1) == "fcm")
        // The row's bad token is not listed: only answers about the token list it.
        #expect(try world.database.query("SELECT count(*) FROM pgpush.invalid_tokens WHERE device_token = $1", [Self.token]).int(0, 0) == 0)
    }

    @Test("401 THIRD_PARTY_AUTH_ERROR: that row fails with the reason, app_health flags it, other rows go on")
    func thirdPartyCredentials() async throws {
        let iosTarget = Self.token + "-ios"
        let world = try FCMWorld { $0.tokenFates = [iosTarget: .thirdPartyAuthError] }
        defer { world.stop() }
        let ios = try world.insert(token: iosTarget)
        let android = try (0..<5).map { try world.insert(token: Self.token + "-\($0)") }
        #expect(try await world.run { database in
            try world.unfinished() == 0
                && database.query("SELECT count(*) FROM pgpush.app_health WHERE service = 'fcm' AND NOT healthy").int(0, 0) == 1
        })
        #expect(try world.row(ios).status == "failed" && world.row(ios).reason == "THIRD_PARTY_AUTH_ERROR")
        for id in android { #expect(try world.row(id).status == "delivered") }
        let health = try world.database.query("SELECT reason FROM pgpush.app_health WHERE service = 'fcm'")
        #expect(health.string(0, 0)?.hasPrefix("THIRD_PARTY_AUTH_ERROR") == true)
        #expect(try world.database.query("SELECT count(*) FROM pgpush.invalid_tokens").int(0, 0) == 0)
    }

    @Test("403 PERMISSION_DENIED: the app's FCM sending paused with what to check, rows stay queued, attempts given back")
    func permissionDenied() async throws {
        let world = try FCMWorld { $0.faults.permissionDenied = true }
        defer { world.stop() }
        for index in 0..<20 { try world.insert(token: Self.token + "-\(index)") }
        #expect(try await world.run { database in
            try database.query("SELECT count(*) FROM pgpush.app_health WHERE service = 'fcm' AND NOT healthy").int(0, 0) == 1
        })
        let health = try world.database.query("SELECT reason FROM pgpush.app_health WHERE app = 'default' AND service = 'fcm'")
        #expect(health.string(0, 0)?.contains("API is enabled") == true, "\(health.string(0, 0) ?? "")")
        #expect(try world.database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'queued' AND attempts = 0")
            .int(0, 0) == 20)
        // The first request probes; the pause holds the rest back.
        #expect(world.simulator.report().sends <= 2)
    }

    @Test("401 for the access token: renewed once and resent; refused again: paused, rows queued, token requests bounded")
    func accessTokenRefused() async throws {
        let world = try FCMWorld { $0.faults.refuseAccessTokens = true }
        defer { world.stop() }
        for index in 0..<30 { try world.insert(token: Self.token + "-\(index)") }
        let log = LogCapture()
        #expect(try await world.run(until: { database in
            try database.query("SELECT count(*) FROM pgpush.app_health WHERE service = 'fcm' AND NOT healthy").int(0, 0) == 1
        }, log: log.log))
        let health = try world.database.query("SELECT reason FROM pgpush.app_health WHERE service = 'fcm'")
        #expect(health.string(0, 0)?.hasPrefix("AccessTokenRefused") == true, "\(health.string(0, 0) ?? "")")
        #expect(try world.database.query("SELECT count(*) FROM pgpush.notifications WHERE status = 'queued' AND attempts = 0")
            .int(0, 0) == 30)
        let report = world.simulator.report()
        // The first token, one renewal after its refusal: a handful, not one per row.
        #expect(report.tokenRequests >= 2 && report.tokenRequests <= 3, "\(report.tokenRequests) token requests")
        #expect(report.sends <= 3, "\(report.sends) sends")
        #expect(!log.text.contains("ya29."), "an access token reached the log")
    }

    @Test("401 for a revoked access token: one renewal, the same request resent with the new token and delivered, uncounted")
    func revokedAccessTokenIsRenewedAndTheRowResent() async throws {
        let world = try FCMWorld { $0.faults.revokeFirstAccessToken = true }
        defer { world.stop() }
        let id = try world.insert(token: Self.token)
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        let row = try world.row(id)
        #expect(row.status == "delivered", "\(row)")
        // Resent inside the one claim, not paused and claimed again.
        let counts = try world.database.query("SELECT attempts, claim_count FROM pgpush.notifications WHERE id = $1", [id])
        #expect(counts.int(0, 0) == 1 && counts.int(0, 1) == 1, "attempts \(counts.int(0, 0) ?? -1), claims \(counts.int(0, 1) ?? -1)")
        let report = world.simulator.report()
        #expect(report.tokenRequests == 2, "\(report.tokenRequests) token requests")
        #expect(report.delivered == 1)
        #expect(try world.database.query("SELECT count(*) FROM pgpush.app_health WHERE NOT healthy").int(0, 0) == 0)
    }

    @Test("429 QUOTA_EXCEEDED: retried after Retry-After, then delivered; the attempt counts")
    func quotaExceeded() async throws {
        let world = try FCMWorld {
            $0.faults.quotaExceededEvery = 2
            $0.faults.retryAfterSeconds = 1
        }
        defer { world.stop() }
        let ids = try (0..<4).map { try world.insert(token: Self.token + "-\($0)") }
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        for id in ids { #expect(try world.row(id).status == "delivered") }
        let throttled = try world.database.query("""
            SELECT count(*), min(n.attempts) FROM pgpush.delivery_errors e JOIN pgpush.notifications n ON n.id = e.notification_id
             WHERE e.reason = 'QUOTA_EXCEEDED' AND e.status = 429
            """)
        #expect((throttled.int(0, 0) ?? 0) >= 1)
        #expect((throttled.int(0, 1) ?? 0) >= 2)
        // Not sooner than Retry-After (1 s), though the app's own 429 back-off starts at 0.1 s.
        let waited = try world.database.query("""
            SELECT min(extract(epoch FROM n.finished_at - e.created_at)) FROM pgpush.delivery_errors e
              JOIN pgpush.notifications n ON n.id = e.notification_id WHERE e.reason = 'QUOTA_EXCEEDED'
            """).double(0, 0) ?? 0
        #expect(waited >= 0.9, "retried \(waited) s after the 429")
    }

    @Test("500 INTERNAL and 503 UNAVAILABLE: the 5xx rule, then delivered")
    func serverTrouble() async throws {
        let world = try FCMWorld {
            $0.faults.unavailableEvery = 3
            $0.faults.internalErrorEvery = 5
            $0.faults.retryAfterSeconds = 0
        }
        defer { world.stop() }
        let ids = try (0..<6).map { try world.insert(token: Self.token + "-\($0)") }
        #expect(try await world.run { _ in try world.unfinished() == 0 })
        for id in ids { #expect(try world.row(id).status == "delivered") }
        let errors = try world.database.query("SELECT DISTINCT reason FROM pgpush.delivery_errors ORDER BY 1")
        #expect((0..<errors.rowCount).compactMap { errors.string($0, 0) } == ["INTERNAL", "UNAVAILABLE"])
    }

    @Test("APNs rows of an app with only FCM credentials wait: not claimed, not lost")
    func rowsOfAnUnconfiguredServiceWait() async throws {
        let world = try FCMWorld()
        defer { world.stop() }
        let apns = try world.insert(token: String(repeating: "ab", count: 32), payload: #"{"aps":{"alert":"x"}}"#, service: "apns")
        let fcm = try world.insert(token: Self.token)
        #expect(try await world.run { _ in try world.row(fcm).status == "delivered" })
        let waiting = try world.row(apns)
        #expect(waiting.status == "queued" && waiting.attempts == 0)
    }
}

/// The log lines a worker wrote, as text.
final class LogCapture: Sendable {
    private let lines = Locked<[String]>([])
    var log: Log { Log(sink: { [lines] line in lines.withLock { $0.append(line) } }) }
    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}
