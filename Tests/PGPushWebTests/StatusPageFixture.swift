import Foundation
import LocalHTTP
import PGPushTestSupport
import PGPushWeb
import Postgres

/// A migrated database with rows of several apps, services, lanes and statuses, and the
/// status page served for it on a port of its own (the same server and site `pgpush web`
/// runs, in this process).
final class StatusPageFixture: @unchecked Sendable {
    // @unchecked: set up once, then only read by the test that owns it.
    let conninfo: String
    let admin: PostgresConnection
    private var servers: [HTTPServer] = []

    static let apnsPayload = #"{"aps":{"alert":"PAYLOAD-MARKER-apns"}}"#
    static let fcmPayload = #"{"data":{"k":"PAYLOAD-MARKER-fcm"}}"#
    /// A reason a service could send back, written to break the page if it were not escaped.
    static let markupReason = "<script>document.title='owned'</script><b id=\"injected\">bold</b>\u{7}\u{202E}end"

    init() throws {
        conninfo = try TestDatabase.migrated()
        admin = try PostgresConnection(conninfo: conninfo)
    }

    deinit { servers.forEach { $0.stop() } }

    /// Serves the page as `conninfo` (default: the database's owner) with `token` (nil: actions off).
    func serve(conninfo: String? = nil, token: String? = nil) throws -> String {
        let site = StatusSite(conninfo: conninfo ?? self.conninfo, token: token, version: "test")
        let server = try HTTPServer(address: "127.0.0.1:0", setting: "PGPUSH_WEB_LISTEN", limits: StatusSite.limits) { site.answer($0) }
        servers.append(server)
        return "http://127.0.0.1:\(server.port)"
    }

    static func apnsToken(_ number: Int) -> String { String(format: "%064x", number) }

    /// `count` rows of `app` and `service` in `lane`, queued and due now; their ids.
    @discardableResult
    func enqueue(_ count: Int, app: String, service: String = "apns", lane: String = "normal",
                 sendAfter: String = "now()") throws -> [Int] {
        let first = Int.random(in: 1...1_000_000_000)
        let tokens = (0..<count).map { service == "apns" ? Self.apnsToken(first + $0) : "fcm-token-\(first + $0)" }
        let result = try admin.query("""
            SELECT pgpush.enqueue_many(device_tokens => $1, payload => $2::jsonb, app => $3, service => $4, lane => $5,
                                       send_after => \(sendAfter))
            """, [tokens, service == "apns" ? Self.apnsPayload : Self.fcmPayload, app, service, lane])
        return (0..<result.rowCount).compactMap { result.int($0, 0) }
    }

    /// Finishes `ids` as `status` `minutesAgo` minutes ago (with a reason for failures).
    func finish(_ ids: [Int], as status: String, minutesAgo: Int, reason: String? = nil, httpStatus: Int? = nil) throws {
        try admin.query("""
            UPDATE pgpush.notifications
               SET status = $2, attempts = 1, claim_count = 1, last_reason = $3, last_status = $4,
                   finished_at = now() - make_interval(mins => $5), updated_at = now()
             WHERE id = ANY($1)
            """, [ids, status, reason, httpStatus, minutesAgo])
    }

    func markSending(_ ids: [Int]) throws {
        try admin.query("""
            UPDATE pgpush.notifications SET status = 'sending', claim_count = 1, locked_by = 'w1', locked_until = now() + interval '1 minute'
             WHERE id = ANY($1)
            """, [ids])
    }

    /// Rows of two apps, two services, three lanes and every status; the finished ones
    /// 3 to 40 minutes ago (far from the hour's edge and from the current minute).
    func fillWithEveryKindOfRow() throws {
        for (app, scale) in [("shop", 1), ("news", 2)] {
            try enqueue(3 * scale, app: app, lane: "urgent")
            try enqueue(5 * scale, app: app, lane: "normal", sendAfter: "now() - interval '10 minutes'")
            try enqueue(7 * scale, app: app, lane: "bulk")
            try enqueue(2 * scale, app: app, lane: "normal", sendAfter: "now() + interval '1 hour'")
            try markSending(try enqueue(scale, app: app))
            try finish(try enqueue(6 * scale, app: app), as: "delivered", minutesAgo: 3)
            try finish(try enqueue(4 * scale, app: app), as: "delivered", minutesAgo: 17)
            try finish(try enqueue(2 * scale, app: app), as: "failed", minutesAgo: 5, reason: "BadDeviceToken", httpStatus: 400)
            try finish(try enqueue(scale, app: app), as: "expired", minutesAgo: 40, reason: "Expired")
            try finish(try enqueue(scale, app: app), as: "cancelled", minutesAgo: 8)
            // Finished two hours ago: in no figure of the last hour.
            try finish(try enqueue(3, app: app), as: "delivered", minutesAgo: 120)
            try enqueue(4 * scale, app: app, service: "fcm", lane: "bulk")
            try finish(try enqueue(3 * scale, app: app, service: "fcm"), as: "delivered", minutesAgo: 9)
            try finish(try enqueue(scale, app: app, service: "fcm"), as: "failed", minutesAgo: 9, reason: "UNREGISTERED", httpStatus: 404)
        }
        try admin.execute(script: """
            INSERT INTO pgpush.app_health (app, service, healthy, reason, since) VALUES
                ('shop', 'apns', false, 'InvalidProviderToken', now() - interval '12 minutes'), ('news', 'apns', true, NULL, now());
            INSERT INTO pgpush.workers (id, host, pid, version, apps, connections, heartbeat_at, sent, delivered, failed, retried)
            VALUES ('worker-live', 'host-a', 4242, '0.4.0', '{shop,news}', 2, now(), 120, 110, 10, 3),
                   ('worker-gone', 'host-b', 4343, '0.4.0', '{shop}', 1, now() - interval '10 minutes', 5, 5, 0, 0);
            """)
    }

    /// The live worker beats now: a worker is live for 30 s after its heartbeat, and under
    /// ThreadSanitizer starting the browser alone took longer than that.
    func liveWorkerBeats() throws {
        try admin.query("UPDATE pgpush.workers SET heartbeat_at = now() WHERE id = 'worker-live'")
    }

    /// What SQL says the overview's figures are, per "app/service" and field.
    func expectedFigures() throws -> [String: [String: Int]] {
        let rows = try admin.query("""
            SELECT app || '/' || service,
                   count(*) FILTER (WHERE status = 'queued' AND lane = 'urgent' AND send_after <= now()),
                   count(*) FILTER (WHERE status = 'queued' AND lane = 'normal' AND send_after <= now()),
                   count(*) FILTER (WHERE status = 'queued' AND lane = 'bulk' AND send_after <= now()),
                   count(*) FILTER (WHERE status = 'queued' AND send_after > now()),
                   count(*) FILTER (WHERE status = 'sending'),
                   count(*) FILTER (WHERE status = 'delivered' AND finished_at >= date_trunc('minute', now()) - interval '60 minutes'),
                   count(*) FILTER (WHERE status = 'failed' AND finished_at >= date_trunc('minute', now()) - interval '60 minutes'),
                   count(*) FILTER (WHERE status = 'expired' AND finished_at >= date_trunc('minute', now()) - interval '60 minutes'),
                   count(*) FILTER (WHERE status = 'cancelled' AND finished_at >= date_trunc('minute', now()) - interval '60 minutes')
              FROM pgpush.notifications
             GROUP BY 1
            """)
        let fields = ["due-urgent", "due-normal", "due-bulk", "scheduled", "sending", "delivered", "failed", "expired", "cancelled"]
        var figures: [String: [String: Int]] = [:]
        for row in 0..<rows.rowCount {
            figures[rows.string(row, 0) ?? ""] = Dictionary(uniqueKeysWithValues: fields.enumerated().map { ($0.element, rows.int(row, $0.offset + 1) ?? -1) })
        }
        return figures
    }
}

/// The page's figures as the browser renders them: per "app/service", each cell's text as a number.
func figuresOnThePage(_ browser: HeadlessChromium) throws -> [String: [String: Int]] {
    var figures: [String: [String: Int]] = [:]
    for row in try browser.elements("table.overview tbody tr") {
        let key = (try browser.attribute(row, "data-app") ?? "") + "/" + (try browser.attribute(row, "data-service") ?? "")
        var fields: [String: Int] = [:]
        for field in ["due-urgent", "due-normal", "due-bulk", "scheduled", "sending", "delivered", "failed", "expired", "cancelled"] {
            let text = try browser.text("tr[data-app='\(key.split(separator: "/")[0])'][data-service='\(key.split(separator: "/")[1])'] td[data-field='\(field)']")
            fields[field] = Int(text.replacingOccurrences(of: ",", with: "")) ?? -1
        }
        figures[key] = fields
    }
    return figures
}
