import Postgres

/// What the three pages show, read in one read-only transaction each. Every statement the
/// page runs is here, as SQL. Each reads an index or a view bounded by one (the queued
/// rows' index, the lease index, the finished-at index, delivery errors by notification),
/// so a page's cost follows what is in the queue and the last hour, not the table's size.
/// No statement names `payload`, `device_token`, `subscription` or `idempotency_key`:
/// a role that may not read them (pgpush_monitor) can show every page.
package enum StatusPages {
    package static let lanes = ["urgent", "normal", "bulk"]
    private static let iso = "YYYY-MM-DD\"T\"HH24:MI:SS\"Z\""
    /// The failures page lists rows finished this long ago at most.
    package static let failuresWindowDays = 7
    package static let failuresShown = 200

    // MARK: The overview

    package struct Overview: Sendable, Equatable {
        package var readAt: String
        package var role: String
        package var lines: [Line]
        /// nil: the role may not read `pgpush.app_health` (an application's role).
        package var health: [Health]?
        /// nil: the role may not read `pgpush.worker_health`.
        package var workers: [Worker]?
    }

    /// One app and service.
    package struct Line: Sendable, Equatable {
        package var app: String
        package var service: String
        /// Queued and due now, per lane (`lanes` order); more than `countCap`: at least that many.
        package var due: [Int] = [0, 0, 0]
        /// Queued for later (`send_after` in the future), every lane.
        package var scheduled = 0
        /// Whether a lane's scheduled rows passed the cap: `scheduled` is then a lower bound.
        package var scheduledCapped = false
        package var sending = 0
        /// Finished in the last hour.
        package var delivered = 0, failed = 0, expired = 0, cancelled = 0
        /// Age of the oldest due row; nil when none is due.
        package var oldestDueSeconds: Double?
        /// Delivered and failed (with expired) per minute, index 0 the minute before this one
        /// … 59 an hour ago; the current minute is left out (it is not over).
        package var deliveredPerMinute = [Int](repeating: 0, count: 60)
        package var failedPerMinute = [Int](repeating: 0, count: 60)
    }

    package struct Health: Sendable, Equatable {
        package var app: String
        package var service: String
        package var topic: String?
        package var healthy: Bool
        package var reason: String?
        package var since: String
    }

    package struct Worker: Sendable, Equatable {
        package var id: String
        package var host: String
        package var pid: Int
        package var version: String
        package var secondsSinceHeartbeat: Double
        package var sent: Int, delivered: Int, failed: Int
    }

    /// Queued rows are counted exactly up to this many per app, service and lane; past it
    /// the page says "10,000+". An exact count of a big backlog reads all of its index
    /// (a million queued rows: about 200 ms here), the cap keeps the overview near 20 ms.
    package static let countCap = 10_000

    /// The (app, service, lane) groups of queued rows, found by skipping through the queued
    /// rows' index one group at a time; then per group the due rows and the scheduled rows,
    /// counted up to the cap, and the oldest due row (the group's first index entry).
    static let dueByLane = """
        WITH RECURSIVE groups AS (
            (SELECT app, service, lane FROM pgpush.notifications WHERE status = 'queued' ORDER BY app, service, lane LIMIT 1)
          UNION ALL
            SELECT next.app, next.service, next.lane
              FROM groups g
             CROSS JOIN LATERAL (SELECT app, service, lane FROM pgpush.notifications
                                  WHERE status = 'queued' AND (app, service, lane) > (g.app, g.service, g.lane)
                                  ORDER BY app, service, lane LIMIT 1) next
        )
        SELECT g.app, g.service, g.lane,
               (SELECT count(*) FROM (SELECT FROM pgpush.notifications n
                                       WHERE n.status = 'queued' AND n.app = g.app AND n.service = g.service AND n.lane = g.lane
                                         AND n.send_after <= now() LIMIT \(countCap + 1)) due),
               (SELECT count(*) FROM (SELECT FROM pgpush.notifications n
                                       WHERE n.status = 'queued' AND n.app = g.app AND n.service = g.service AND n.lane = g.lane
                                         AND n.send_after > now() LIMIT \(countCap + 1)) later),
               extract(epoch FROM now() - (SELECT min(n.send_after) FROM pgpush.notifications n
                                            WHERE n.status = 'queued' AND n.app = g.app AND n.service = g.service AND n.lane = g.lane
                                              AND n.send_after <= now() AND isfinite(n.send_after)))
          FROM groups g
        """
    static let sending = """
        SELECT app, service, count(*) FROM pgpush.notifications WHERE status = 'sending' GROUP BY app, service
        """
    static let lastHour = """
        SELECT app, service, status, floor(extract(epoch FROM date_trunc('minute', now()) - finished_at) / 60)::int, count(*)
          FROM pgpush.notifications
         WHERE finished_at >= date_trunc('minute', now()) - interval '60 minutes'
         GROUP BY 1, 2, 3, 4
        """
    static let health = """
        SELECT app, service, topic, healthy, reason, to_char(since AT TIME ZONE 'UTC', '\(iso)')
          FROM pgpush.app_health ORDER BY healthy, app, service, topic NULLS FIRST
        """
    static let liveWorkers = """
        SELECT id, host, pid, version, seconds_since_heartbeat, sent, delivered, failed
          FROM pgpush.worker_health WHERE alive ORDER BY id
        """
    static let readable = """
        SELECT to_char(now() AT TIME ZONE 'UTC', '\(iso)'), current_user::text,
               has_table_privilege('pgpush.app_health', 'SELECT'), has_table_privilege('pgpush.worker_health', 'SELECT')
        """

    package static func overview(_ connection: PostgresConnection) throws -> Overview {
        try readOnly(connection) {
            let header = try connection.query(readable)
            var lines: [String: Line] = [:]
            func line(_ result: PostgresResult, _ row: Int) -> String {
                let app = result.string(row, 0) ?? "", service = result.string(row, 1) ?? ""
                let key = app + "\u{0}" + service
                if lines[key] == nil { lines[key] = Line(app: app, service: service) }
                return key
            }
            let due = try connection.query(dueByLane)
            for row in 0..<due.rowCount {
                let key = line(due, row)
                if let lane = lanes.firstIndex(of: due.string(row, 2) ?? "") { lines[key]!.due[lane] += due.int(row, 3) ?? 0 }
                let scheduled = due.int(row, 4) ?? 0
                lines[key]!.scheduled += min(scheduled, countCap)
                lines[key]!.scheduledCapped = lines[key]!.scheduledCapped || scheduled > countCap
                if let age = due.double(row, 5) {
                    lines[key]!.oldestDueSeconds = max(lines[key]!.oldestDueSeconds ?? 0, age)
                }
            }
            let sending = try connection.query(Self.sending)
            for row in 0..<sending.rowCount { lines[line(sending, row)]!.sending = sending.int(row, 2) ?? 0 }
            let finished = try connection.query(lastHour)
            for row in 0..<finished.rowCount {
                let key = line(finished, row)
                let count = finished.int(row, 4) ?? 0
                let minute = finished.int(row, 3) ?? -1
                switch finished.string(row, 2) {
                case "delivered": lines[key]!.delivered += count
                case "failed": lines[key]!.failed += count
                case "expired": lines[key]!.expired += count
                case "cancelled": lines[key]!.cancelled += count
                default: break
                }
                // Minute 0 is the one before now's; the current minute (-1) counts in the totals only.
                guard (0..<60).contains(minute) else { continue }
                switch finished.string(row, 2) {
                case "delivered": lines[key]!.deliveredPerMinute[minute] += count
                case "failed", "expired": lines[key]!.failedPerMinute[minute] += count
                default: break
                }
            }
            var health: [Health]?
            if header.bool(0, 2) == true {
                let rows = try connection.query(Self.health)
                health = (0..<rows.rowCount).map { row in
                    Health(app: rows.string(row, 0) ?? "", service: rows.string(row, 1) ?? "", topic: rows.string(row, 2),
                           healthy: rows.bool(row, 3) ?? false, reason: rows.string(row, 4), since: rows.string(row, 5) ?? "")
                }
            }
            var workers: [Worker]?
            if header.bool(0, 3) == true {
                let rows = try connection.query(liveWorkers)
                workers = (0..<rows.rowCount).map { row in
                    Worker(id: rows.string(row, 0) ?? "", host: rows.string(row, 1) ?? "", pid: rows.int(row, 2) ?? 0,
                           version: rows.string(row, 3) ?? "", secondsSinceHeartbeat: rows.double(row, 4) ?? 0,
                           sent: rows.int(row, 5) ?? 0, delivered: rows.int(row, 6) ?? 0, failed: rows.int(row, 7) ?? 0)
                }
            }
            return Overview(readAt: header.string(0, 0) ?? "", role: header.string(0, 1) ?? "",
                            lines: lines.values.sorted { ($0.app, $0.service) < ($1.app, $1.service) },
                            health: health, workers: workers)
        }
    }

    // MARK: Failures

    package struct Filter: Sendable, Equatable {
        package var app: String?
        package var service: String?
        package var reason: String?

        package init(app: String? = nil, service: String? = nil, reason: String? = nil) {
            self.app = app
            self.service = service
            self.reason = reason
        }
    }

    package struct Failure: Sendable, Equatable {
        package var id: Int
        package var app: String
        package var service: String
        package var lane: String
        package var status: String
        package var attempts: Int
        package var httpStatus: Int?
        /// The first `reasonShown` characters of the reason, and its whole length.
        package var reason: String?
        package var reasonLength: Int
        package var finishedAt: String
    }

    package static let reasonShown = 300

    static let failures = """
        SELECT id, app, service, lane, status, attempts, last_status, left(last_reason, \(reasonShown)), coalesce(length(last_reason), 0),
               to_char(finished_at AT TIME ZONE 'UTC', '\(iso)')
          FROM pgpush.notifications
         WHERE finished_at >= now() - make_interval(days => \(failuresWindowDays))
           AND status IN ('failed', 'expired')
           AND ($1::text IS NULL OR app = $1) AND ($2::text IS NULL OR service = $2) AND ($3::text IS NULL OR last_reason = $3)
         ORDER BY finished_at DESC, id DESC
         LIMIT \(failuresShown)
        """

    package static func failures(_ connection: PostgresConnection, filter: Filter) throws -> [Failure] {
        try readOnly(connection) {
            let rows = try connection.query(failures, [filter.app, filter.service, filter.reason])
            return (0..<rows.rowCount).map { row in
                Failure(id: rows.int(row, 0) ?? 0, app: rows.string(row, 1) ?? "", service: rows.string(row, 2) ?? "",
                        lane: rows.string(row, 3) ?? "", status: rows.string(row, 4) ?? "", attempts: rows.int(row, 5) ?? 0,
                        httpStatus: rows.int(row, 6), reason: rows.string(row, 7), reasonLength: rows.int(row, 8) ?? 0,
                        finishedAt: rows.string(row, 9) ?? "")
            }
        }
    }

    // MARK: One notification

    package struct Detail: Sendable, Equatable {
        /// Column name and value (nil: null), in the order shown.
        package var fields: [(name: String, value: String?)]
        package var status: String
        package var reason: String?
        package var reasonLength: Int
        package var errors: [DeliveryError]

        package static func == (left: Detail, right: Detail) -> Bool {
            left.status == right.status && left.reason == right.reason && left.errors == right.errors
                && left.fields.elementsEqual(right.fields) { $0 == $1 }
        }
    }

    package struct DeliveryError: Sendable, Equatable {
        package var attempt: Int
        package var httpStatus: Int?
        package var reason: String
        package var reasonLength: Int
        package var detail: String?
        package var detailLength: Int
        package var workerID: String?
        package var at: String
    }

    package static let detailShown = 10_000
    package static let errorsShown = 100

    static let notification = """
        SELECT id::text, app, service, lane, status, push_type, priority::text, topic, attempts::text, claim_count::text,
               last_status::text, to_char(send_after AT TIME ZONE 'UTC', '\(iso)'), to_char(expires_at AT TIME ZONE 'UTC', '\(iso)'),
               to_char(created_at AT TIME ZONE 'UTC', '\(iso)'), to_char(updated_at AT TIME ZONE 'UTC', '\(iso)'),
               to_char(finished_at AT TIME ZONE 'UTC', '\(iso)'), locked_by, to_char(locked_until AT TIME ZONE 'UTC', '\(iso)'),
               apns_id::text, message_id, left(last_reason, \(detailShown)), coalesce(length(last_reason), 0)
          FROM pgpush.notifications
         WHERE id = $1
        """
    static let notificationColumns = ["id", "app", "service", "lane", "status", "push_type", "priority", "topic", "attempts",
                                      "claim_count", "last_status", "send_after", "expires_at", "created_at", "updated_at",
                                      "finished_at", "locked_by", "locked_until", "apns_id", "message_id"]
    static let deliveryErrors = """
        SELECT attempt, status, left(reason, \(reasonShown)), length(reason), left(detail, \(detailShown)), coalesce(length(detail), 0),
               worker_id, to_char(created_at AT TIME ZONE 'UTC', '\(iso)')
          FROM pgpush.delivery_errors
         WHERE notification_id = $1
         ORDER BY created_at, id
         LIMIT \(errorsShown)
        """

    /// nil: no such row, or not one the role may see.
    package static func notification(_ connection: PostgresConnection, id: Int) throws -> Detail? {
        try readOnly(connection) {
            let row = try connection.query(notification, [id])
            guard row.rowCount == 1 else { return nil }
            let fields = notificationColumns.enumerated().map { (name: $0.element, value: row.string(0, $0.offset)) }
            let errors = try connection.query(deliveryErrors, [id])
            return Detail(fields: fields, status: row.string(0, 4) ?? "", reason: row.string(0, 20), reasonLength: row.int(0, 21) ?? 0,
                          errors: (0..<errors.rowCount).map { index in
                              DeliveryError(attempt: errors.int(index, 0) ?? 0, httpStatus: errors.int(index, 1),
                                            reason: errors.string(index, 2) ?? "", reasonLength: errors.int(index, 3) ?? 0,
                                            detail: errors.string(index, 4), detailLength: errors.int(index, 5) ?? 0,
                                            workerID: errors.string(index, 6), at: errors.string(index, 7) ?? "")
                          })
        }
    }

    // MARK: Actions

    /// Puts failed and expired rows back in the queue (`pgpush.requeue`); how many it moved.
    package static func requeue(_ connection: PostgresConnection, ids: [Int]) throws -> Int {
        try connection.query("SELECT count(*) FROM pgpush.requeue($1::bigint[])", [ids]).int(0, 0) ?? 0
    }

    /// Cancels queued rows not yet claimed (`pgpush.cancel`); how many it cancelled.
    package static func cancel(_ connection: PostgresConnection, ids: [Int]) throws -> Int {
        try connection.query("SELECT count(*) FROM pgpush.cancel($1::bigint[])", [ids]).int(0, 0) ?? 0
    }

    /// One read-only transaction with settings of its own (`SET LOCAL`, so they hold through
    /// a transaction pooler and leave the session as it was): a statement timeout, and no JIT.
    /// The overview's estimates (a count per group, up to the cap) pass jit_above_cost, and
    /// compiling its 45 expressions took 20 to 25 ms of a statement that runs in 1 to 20.
    static func readOnly<T>(_ connection: PostgresConnection, _ body: () throws -> T) throws -> T {
        try connection.execute(script: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL statement_timeout = '10s'; SET LOCAL jit = off")
        do {
            let value = try body()
            try connection.execute(script: "COMMIT")
            return value
        } catch {
            try? connection.execute(script: "ROLLBACK")
            throw error
        }
    }
}
