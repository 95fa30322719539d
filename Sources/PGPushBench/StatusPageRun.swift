import Foundation
import LocalHTTP
import PGPushWeb
import Postgres

/// The status page on a big table (`web` scenario): `--web-finished` finished rows spread
/// over a week (so the last hour holds a week's hourly share) and `--web-queued` queued rows
/// in three apps and three lanes, then each page answered many times through `StatusSite`
/// (the queries and the HTML, what `pgpush web` does for a request less the socket), beside:
/// - the floor: one round trip (`SELECT 1`) on the same kind of connection, the least any
///   page that reads the database costs;
/// - a dashboard without the page's indexed reads: every row counted by app, service and
///   status (`GROUP BY` over the table), what a page that counts everything pays.
enum StatusPageRun {
    static let apps = ["shop", "news", "games"]
    static let timedAnswers = 50
    static let naiveCounts = 3

    static func run(in context: BenchContext) throws -> StatusPageResult {
        let options = context.options
        let conninfo = try context.database.fresh("web")
        defer { context.database.discard(conninfo) }
        let connection = try PostgresConnection(conninfo: conninfo)
        context.progress("web: \(options.webFinishedRows) finished rows over a week and \(options.webQueuedRows) queued, 3 apps × 3 lanes")
        try fill(connection, finished: options.webFinishedRows, queued: options.webQueuedRows)
        let lastHour = try connection.query("""
            SELECT count(*) FROM pgpush.notifications WHERE finished_at >= date_trunc('minute', now()) - interval '60 minutes'
            """).int(0, 0) ?? 0
        let failure = try connection.query("SELECT max(id) FROM pgpush.notifications WHERE status = 'failed'").int(0, 0) ?? 0

        let site = StatusSite(conninfo: conninfo, token: nil, version: "bench")
        var problems: [String] = []
        func timed(_ path: String, expecting marker: String) -> LatencySummary? {
            var milliseconds: [Double] = []
            // The first answers open the connection and plan: not timed.
            for attempt in 0..<(timedAnswers + 3) {
                let started = ContinuousClock.now
                let answer = site.answer(HTTPRequest(method: "GET", path: path.split(separator: "?").first.map(String.init) ?? path,
                                                     query: HTTPRequest.decodeForm(path.split(separator: "?").dropFirst().first ?? ""),
                                                     headers: [("host", "127.0.0.1")]))
                let elapsed = ContinuousClock.now - started
                let body = String(decoding: answer.body, as: UTF8.self)
                if answer.status != 200 || !body.contains(marker) {
                    problems.append("web: \(path) answered \(answer.status) without \(marker.debugDescription)")
                    return nil
                }
                if attempt >= 3 { milliseconds.append(Double(elapsed / .nanoseconds(1)) / 1e6) }
            }
            return LatencySummary(milliseconds: milliseconds)
        }
        let overview = timed("/", expecting: "data-app=\"shop\"")
        let failures = timed("/failures?app=news", expecting: "data-id=")
        let notification = timed("/notifications/\(failure)", expecting: "Delivery errors")

        var roundTrips: [Double] = []
        for attempt in 0..<(timedAnswers + 3) {
            let started = ContinuousClock.now
            _ = try connection.query("SELECT 1")
            if attempt >= 3 { roundTrips.append(Double((ContinuousClock.now - started) / .nanoseconds(1)) / 1e6) }
        }
        var naive: [Double] = []
        for _ in 0..<naiveCounts {
            let started = ContinuousClock.now
            _ = try connection.query("SELECT app, service, status, count(*) FROM pgpush.notifications GROUP BY 1, 2, 3")
            naive.append(Double((ContinuousClock.now - started) / .nanoseconds(1)) / 1e6)
        }
        return StatusPageResult(finishedRows: options.webFinishedRows, queuedRows: options.webQueuedRows, finishedLastHour: lastHour,
                                overview: overview, failures: failures, notification: notification,
                                roundTrip: LatencySummary(milliseconds: roundTrips), countEverything: LatencySummary(milliseconds: naive),
                                problems: problems)
    }

    /// Finished rows, one every week/`finished` seconds up to now (every 50th failed, every
    /// 97th expired), and queued rows due now; then VACUUM ANALYZE, as autovacuum would have.
    static func fill(_ connection: PostgresConnection, finished: Int, queued: Int) throws {
        let spacing = 7.0 * 86_400 / Double(max(finished, 1))
        try connection.query("""
            INSERT INTO pgpush.notifications (app, service, device_token, payload, status, attempts, claim_count, finished_at,
                                              created_at, send_after, last_status, last_reason)
            SELECT ($1::text[])[1 + g % 3], (ARRAY['apns','fcm'])[1 + (g / 3) % 2], md5(g::text) || md5((g + 1)::text),
                   '{"aps":{"alert":"x"}}',
                   CASE WHEN g % 50 = 0 THEN 'failed' WHEN g % 97 = 0 THEN 'expired' ELSE 'delivered' END, 1, 1,
                   now() - make_interval(secs => ($2::int - g) * $3::float8), now() - make_interval(secs => ($2::int - g) * $3::float8 + 1),
                   now() - make_interval(secs => ($2::int - g) * $3::float8 + 1),
                   CASE WHEN g % 50 = 0 THEN 400 END,
                   CASE WHEN g % 50 = 0 THEN 'BadDeviceToken' WHEN g % 97 = 0 THEN 'Expired' END
              FROM generate_series(1, $2::int) g
            """, [apps, finished, spacing])
        try connection.query("""
            INSERT INTO pgpush.delivery_errors (notification_id, app, attempt, status, reason)
            SELECT id, app, 1, 400, 'BadDeviceToken' FROM pgpush.notifications
             WHERE status = 'failed' AND finished_at >= now() - interval '1 hour'
            """)
        try connection.query("""
            INSERT INTO pgpush.notifications (app, device_token, payload, lane)
            SELECT ($1::text[])[1 + g % 3], md5((-g)::text) || md5((-g - 1)::text), '{"aps":{"alert":"x"}}',
                   (ARRAY['urgent','normal','bulk','bulk'])[1 + g % 4]
              FROM generate_series(1, $2::int) g
            """, [apps, queued])
        try connection.execute(script: "VACUUM ANALYZE pgpush.notifications")
        try connection.execute(script: "VACUUM ANALYZE pgpush.delivery_errors")
    }
}

/// The `web` scenario (`StatusPageRun`), milliseconds per answer.
package struct StatusPageResult: Sendable, Codable, Equatable {
    package var finishedRows: Int
    package var queuedRows: Int
    /// Rows finished in the last hour: what the overview's chart reads.
    package var finishedLastHour: Int
    package var overview: LatencySummary?
    package var failures: LatencySummary?
    package var notification: LatencySummary?
    /// `SELECT 1` on a connection: the floor of any page that reads the database.
    package var roundTrip: LatencySummary?
    /// Every row counted by app, service and status: a dashboard without indexed reads.
    package var countEverything: LatencySummary?
    package var problems: [String]
}
