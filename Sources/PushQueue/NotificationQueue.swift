import Foundation
import PGPushCore
import Postgres

/// The queue operations on `pgpush.notifications`, one SQL statement each.
///
/// Every state change states its precondition in its WHERE clause: a claim
/// takes only `queued` rows that are due; an outcome applies only to a row
/// still `sending` under this worker's lease and this claim. That is what
/// makes a worker whose lease was taken over harmless: its late writes match
/// no row. Blocking; give the queue a thread of its own.
public final class NotificationQueue {
    public let connection: PostgresConnection
    public let workerID: String

    /// The lowest id a claim looks at (pgpush.history_partitioning.claim_from_id), read
    /// again every `claimFromRefresh`; see `claimFrom()`.
    private var claimFromID: (id: Int64, readAt: ContinuousClock.Instant)?
    static let claimFromRefresh: Duration = .seconds(10)

    public init(connection: PostgresConnection, workerID: String) {
        self.connection = connection
        self.workerID = workerID
    }

    // MARK: Claim

    /// Claims up to `limit` due rows of `app`, oldest first, skipping rows
    /// other workers hold. Rows past `expires_at` become `expired` instead.
    ///
    /// With `skipKnownInvalidTokens`, a row whose token `pgpush.invalid_tokens` lists as
    /// `Unregistered` or `ExpiredToken` becomes `failed` with `KnownInvalidToken` (and one
    /// `delivery_errors` row) instead: APNs already said the token is dead, and sending to
    /// it again until the app registers it anew gains nothing. Likewise a channel row whose
    /// channel `pgpush.channels` records as deleted becomes `failed` with `KnownDeletedChannel`
    /// (APNs never reissues a deleted channel id), whatever `skipKnownInvalidTokens` says.
    ///
    /// A channel row whose channel stores no messages (storage policy 0) is claimed as
    /// `deliverOnce`: APNs takes only `apns-expiration: 0` on such a channel.
    public func claim(app: String, limit: Int, lease: Duration, skipKnownInvalidTokens: Bool = true) throws -> ClaimResult {
        let result = try connection.query(Self.claimSQL,
                                          [workerID, app, limit, lease.seconds, skipKnownInvalidTokens, try claimFrom()])
        var claimed: [ClaimedNotification] = []
        claimed.reserveCapacity(result.rowCount)
        var expired: [Int64] = [], knownInvalid: [Int64] = []
        for row in 0..<result.rowCount {
            guard let id = result.int64(row, 0) else { continue }
            switch result.string(row, 1) {
            case "expired":
                expired.append(id)
                continue
            case "failed":
                knownInvalid.append(id)
                continue
            default:
                break
            }
            let notification = PushNotification(
                id: id,
                app: app,
                deviceToken: result.string(row, 4) ?? "",
                pushType: result.string(row, 5) ?? "",
                priority: result.int(row, 6),
                topic: result.string(row, 7),
                payload: result.bytes(row, 8) ?? [],
                collapseID: result.string(row, 9),
                expiration: result.int64(row, 10),
                deliverOnce: result.bool(row, 12),
                apnsID: result.bytes(row, 11).flatMap(UUID.init(canonicalBytes:)) ?? UUID(),
                channelID: result.string(row, 14)
            )
            claimed.append(ClaimedNotification(
                notification: notification, claimCount: result.int(row, 2) ?? 0, attempts: result.int(row, 3) ?? 0))
        }
        claimed.sort { $0.id < $1.id }
        return ClaimResult(claimed: claimed, expiredIDs: expired, knownInvalidIDs: knownInvalid)
    }

    /// No row below this id is queued or sending. Passed to the claim as a value (not read
    /// inside it), so that PostgreSQL leaves the partitions below it out of the plan: planning
    /// a claim over every partition of a long history costs more than the claim itself
    /// (42 ms instead of 4 ms with 80 partitions, measured). The leader raises the mark
    /// every 10 minutes; a value read up to 10 s ago is at most lower, which only costs
    /// a few more partitions in the plan.
    public func claimFrom() throws -> Int64 {
        if let claimFromID, ContinuousClock.now - claimFromID.readAt < Self.claimFromRefresh { return claimFromID.id }
        let id: Int64
        do {
            id = try connection.query("SELECT claim_from_id FROM pgpush.history_partitioning").int64(0, 0) ?? .min
        } catch let error as PostgresError where error.sqlState == "42P01" {
            id = .min  // a schema before version 9: no partitions to leave out
        }
        claimFromID = (id, ContinuousClock.now)
        return id
    }

    /// Public for `pgpush bench`, which shows the plan PostgreSQL picks for it. Parameters:
    /// worker id, app, limit, lease seconds, skip known-invalid tokens, lowest id (`claimFrom()`).
    ///
    /// The token check is a scalar subquery (the reason of the token's row, at most one by
    /// the primary key) in `due`'s select list: PostgreSQL runs it once per row it takes, as
    /// a primary-key probe of `invalid_tokens`. Written as EXISTS it would be planned with a
    /// hashed alternative costed as if run for every queued row rather than `limit` rows,
    /// and PostgreSQL picks that: a scan of all of `invalid_tokens` on every claim. A join
    /// could pick the same scan. `invalid_tokens` holds tokens in lower case (see
    /// `completeSQL`), rows as inserted: the probe lowers the row's token, which leaves the
    /// index usable. With `$5` false the planner drops the subquery altogether.
    /// Expiry wins over a dead token: such a row ends `expired` as before. Channel rows look up
    /// `channels` by its primary key the same way, only when the row has a channel.
    /// An infinite `expires_at` (rows from before migration 006 refused them) is sent without an
    /// expiration instead of failing the whole claim with "cannot convert infinity to bigint".
    public static let claimSQL = """
        WITH due AS (
            SELECT n.id,
                   CASE WHEN n.channel_id IS NOT NULL THEN
                            CASE WHEN (SELECT c.deleted_at FROM pgpush.channels c
                                        WHERE c.app = n.app AND c.channel_id = n.channel_id) IS NOT NULL
                                 THEN 'KnownDeletedChannel' END
                        WHEN coalesce($5::boolean AND (
                                 SELECT t.reason FROM pgpush.invalid_tokens t
                                  WHERE t.app = n.app AND t.device_token = lower(n.device_token)
                                 ) IN ('Unregistered', 'ExpiredToken'), false)
                        THEN 'KnownInvalidToken'
                   END AS refusal,
                   CASE WHEN n.channel_id IS NOT NULL THEN
                            (SELECT c.message_storage_policy FROM pgpush.channels c
                              WHERE c.app = n.app AND c.channel_id = n.channel_id)
                   END AS storage_policy
              FROM pgpush.notifications n
             WHERE n.status = 'queued' AND n.app = $2 AND n.send_after <= now() AND n.id >= $6
             ORDER BY n.send_after, n.id
             LIMIT $3
             FOR UPDATE OF n SKIP LOCKED
        ), claimed AS (
            UPDATE pgpush.notifications n SET
                status       = CASE WHEN n.expires_at <= now() THEN 'expired'
                                    WHEN due.refusal IS NOT NULL THEN 'failed' ELSE 'sending' END,
                attempts     = n.attempts + CASE WHEN n.expires_at <= now() OR due.refusal IS NOT NULL THEN 0 ELSE 1 END,
                claim_count  = n.claim_count + 1,
                locked_by    = CASE WHEN n.expires_at <= now() OR due.refusal IS NOT NULL THEN NULL ELSE $1 END,
                locked_until = CASE WHEN n.expires_at <= now() OR due.refusal IS NOT NULL THEN NULL
                                    ELSE now() + make_interval(secs => $4) END,
                last_status  = CASE WHEN n.expires_at <= now() THEN n.last_status
                                    WHEN due.refusal IS NOT NULL THEN NULL ELSE n.last_status END,
                last_reason  = CASE WHEN n.expires_at <= now() THEN 'Expired'
                                    ELSE coalesce(due.refusal, n.last_reason) END,
                finished_at  = CASE WHEN n.expires_at <= now() OR due.refusal IS NOT NULL THEN now() END,
                updated_at   = now()
              FROM due
             WHERE n.id = due.id AND n.id >= $6
            RETURNING n.id, n.status, n.claim_count, n.attempts, n.device_token, n.push_type, n.priority, n.topic,
                      n.payload, n.collapse_id,
                      CASE WHEN isfinite(n.expires_at) THEN floor(extract(epoch FROM n.expires_at))::bigint END, n.apns_id,
                      CASE WHEN due.storage_policy = 0 THEN true ELSE n.deliver_once END, n.app, n.channel_id,
                      n.last_reason
        ), refused AS (
            -- No attempt was made: `attempt` is the count of earlier ones, the status is null (no answer).
            INSERT INTO pgpush.delivery_errors
                (notification_id, app, device_token, channel_id, apns_id, attempt, status, reason, worker_id)
            SELECT id, app, device_token, channel_id, apns_id, attempts, NULL, last_reason, $1
              FROM claimed
             WHERE status = 'failed'
        )
        SELECT * FROM claimed
        """

    // MARK: Outcomes

    /// Writes a batch of outcomes in one round trip: row statuses, error rows
    /// and invalid tokens. Returns the ids whose lease still held; the others
    /// were taken over (or cancelled) and are left as they are.
    @discardableResult
    public func complete(_ outcomes: [Outcome]) throws -> Set<Int64> {
        guard !outcomes.isEmpty else { return [] }
        if outcomes.allSatisfy(\.isPlainDelivery) { return try completeDeliveries(outcomes) }
        var ids: [Int64] = [], claims: [Int] = [], statuses: [String] = [], httpStatuses: [Int?] = []
        var reasons: [String?] = [], delays: [Double?] = [], refunds: [Int] = [], answered: [Bool] = []
        var recordsError: [Bool] = [], invalidates: [Bool] = [], appleTimestamps: [Double?] = []
        var uniqueIDs: [UUID?] = []
        for outcome in outcomes.lazy.map(\.storable) {
            ids.append(outcome.id)
            claims.append(outcome.claimCount)
            switch outcome.disposition {
            case .delivered: statuses.append("delivered"); delays.append(nil); refunds.append(0)
            case .failed: statuses.append("failed"); delays.append(nil); refunds.append(0)
            case .expired: statuses.append("expired"); delays.append(nil); refunds.append(0)
            case .retry(let delay, let counts):
                statuses.append("queued"); delays.append(delay.seconds); refunds.append(counts ? 0 : 1)
            }
            answered.append(!outcome.keepsLastAnswer)
            httpStatuses.append(outcome.httpStatus)
            reasons.append(outcome.reason)
            recordsError.append(outcome.recordsError)
            invalidates.append(outcome.invalidatesToken)
            appleTimestamps.append(outcome.appleTimestamp?.timeIntervalSince1970)
            uniqueIDs.append(outcome.apnsUniqueID)
        }
        let result = try connection.query(Self.completeSQL, [
            workerID, ids, claims, statuses, httpStatuses, reasons, delays, refunds, answered,
            recordsError, invalidates, appleTimestamps, uniqueIDs,
        ])
        return Self.ids(in: result)
    }

    /// The common batch, every row accepted with nothing to record beyond it: three arrays
    /// instead of twelve, and none of the general statement's joins for error rows and
    /// invalid tokens, which PostgreSQL runs even when they find nothing. It writes what
    /// `completeSQL` writes for such rows.
    private func completeDeliveries(_ outcomes: [Outcome]) throws -> Set<Int64> {
        var ids: [Int64] = [], claims: [Int] = [], uniqueIDs: [UUID?] = []
        ids.reserveCapacity(outcomes.count)
        claims.reserveCapacity(outcomes.count)
        uniqueIDs.reserveCapacity(outcomes.count)
        for outcome in outcomes {
            ids.append(outcome.id)
            claims.append(outcome.claimCount)
            uniqueIDs.append(outcome.apnsUniqueID)
        }
        let result = try connection.query(Self.completeDeliveriesSQL, [workerID, ids, claims, uniqueIDs])
        return Self.ids(in: result)
    }

    /// The ids in a result's first column.
    private static func ids(in result: PostgresResult) -> Set<Int64> {
        var ids = Set<Int64>(minimumCapacity: result.rowCount)
        for row in 0..<result.rowCount {
            if let id = result.int64(row, 0) { ids.insert(id) }
        }
        return ids
    }

    static let completeDeliveriesSQL = """
        UPDATE pgpush.notifications n SET
            status       = 'delivered',
            last_status  = 200,
            last_reason  = NULL,
            apns_unique_id = o.apns_unique_id,
            finished_at  = now(),
            locked_by    = NULL,
            locked_until = NULL,
            updated_at   = now()
          FROM unnest($2::bigint[], $3::int[], $4::uuid[]) AS o(id, claim_count, apns_unique_id)
         WHERE n.id = o.id AND n.status = 'sending' AND n.locked_by = $1 AND n.claim_count = o.claim_count
        RETURNING n.id
        """

    static let completeSQL = """
        WITH outcome AS (
            SELECT * FROM unnest($2::bigint[], $3::int[], $4::text[], $5::int[], $6::text[], $7::float8[],
                                 $8::int[], $9::bool[], $10::bool[], $11::bool[], $12::float8[], $13::uuid[])
                AS o(id, claim_count, status, http_status, reason, delay, refund, answered, records_error,
                     invalidates_token, apple_timestamp, apns_unique_id)
        ), written AS (
            UPDATE pgpush.notifications n SET
                status       = o.status,
                last_status  = CASE WHEN o.answered THEN o.http_status ELSE n.last_status END,
                last_reason  = CASE WHEN o.answered THEN o.reason ELSE n.last_reason END,
                apns_unique_id = CASE WHEN o.answered THEN o.apns_unique_id ELSE n.apns_unique_id END,
                send_after   = CASE WHEN o.status = 'queued' THEN now() + make_interval(secs => o.delay)
                                    ELSE n.send_after END,
                attempts     = n.attempts - o.refund,
                finished_at  = CASE WHEN o.status = 'queued' THEN NULL ELSE now() END,
                locked_by    = NULL,
                locked_until = NULL,
                updated_at   = now()
              FROM outcome o
             WHERE n.id = o.id AND n.status = 'sending' AND n.locked_by = $1 AND n.claim_count = o.claim_count
            RETURNING n.id, n.app, n.device_token, n.channel_id, n.apns_id, n.attempts + o.refund AS attempt
        ), errors AS (
            INSERT INTO pgpush.delivery_errors
                (notification_id, app, device_token, channel_id, apns_id, attempt, status, reason, worker_id, apns_unique_id)
            SELECT w.id, w.app, w.device_token, w.channel_id, w.apns_id, w.attempt, o.http_status, coalesce(o.reason, 'Unknown'), $1,
                   o.apns_unique_id
              FROM written w JOIN outcome o ON o.id = w.id
             WHERE o.records_error
        ), tokens AS (
            INSERT INTO pgpush.invalid_tokens (app, device_token, reason, apple_timestamp)
            SELECT DISTINCT ON (w.app, lower(w.device_token))
                   w.app, lower(w.device_token), coalesce(o.reason, 'Unknown'), to_timestamp(o.apple_timestamp)
              FROM written w JOIN outcome o ON o.id = w.id
             WHERE o.invalidates_token AND w.device_token IS NOT NULL
             ORDER BY w.app, lower(w.device_token), o.apple_timestamp DESC NULLS LAST
            ON CONFLICT (app, device_token) DO UPDATE SET
                reason          = EXCLUDED.reason,
                apple_timestamp = greatest(pgpush.invalid_tokens.apple_timestamp, EXCLUDED.apple_timestamp),
                last_seen       = now(),
                times_seen      = pgpush.invalid_tokens.times_seen + 1
        ), channels AS (
            -- A broadcast refused for its channel's sake marks the channel, also one created
            -- outside pgpush (its row is then made here, storage policy unknown).
            INSERT INTO pgpush.channels (app, channel_id, refused_reason, refused_at)
            SELECT DISTINCT ON (w.app, w.channel_id) w.app, w.channel_id, coalesce(o.reason, 'Unknown'), now()
              FROM written w JOIN outcome o ON o.id = w.id
             WHERE o.invalidates_token AND w.channel_id IS NOT NULL
             ORDER BY w.app, w.channel_id
            ON CONFLICT (app, channel_id) DO UPDATE SET
                refused_reason = EXCLUDED.refused_reason,
                refused_at     = EXCLUDED.refused_at
        )
        SELECT id FROM written
        """

    // MARK: Leases

    /// Extends the lease of rows still in flight; returns the ids still held.
    @discardableResult
    public func renewLeases(ids: [Int64], lease: Duration) throws -> Set<Int64> {
        guard !ids.isEmpty else { return [] }
        let result = try connection.query("""
            UPDATE pgpush.notifications SET locked_until = now() + make_interval(secs => $3)
             WHERE id = ANY($2::bigint[]) AND status = 'sending' AND locked_by = $1
            RETURNING id
            """, [workerID, ids, lease.seconds])
        return Self.ids(in: result)
    }

    /// Takes back rows whose lease ended (their worker died or hung): back to
    /// `queued`, or `failed` with `LeaseExpired` once `maxAttempts` claims were
    /// spent on them (a row that kills every worker must not loop forever),
    /// or `expired`. Returns how many rows it took back.
    ///
    /// Never the rows this worker still holds in memory: their outcomes may be
    /// waiting for the database to come back, and taking them back would only make
    /// it send them twice. `holding` lists them; without it, none of this worker's
    /// own rows are taken. With it, its other expired rows are taken back like
    /// anyone's: rows it no longer knows it holds, such as a claim whose answer was
    /// lost with the connection, or a row whose outcome it wrote to a primary that
    /// died before its asynchronous standby, now promoted, received it.
    @discardableResult
    public func rescueExpiredLeases(maxAttempts: Int, limit: Int = 1000, holding: [Int64]? = nil) throws -> Int {
        let result = try connection.query("""
            WITH stale AS (
                SELECT id FROM pgpush.notifications
                 WHERE status = 'sending' AND locked_until < now()
                   AND (locked_by IS DISTINCT FROM $3 OR ($4::bigint[] IS NOT NULL AND id <> ALL($4::bigint[])))
                 ORDER BY locked_until
                 LIMIT $2
                 FOR UPDATE SKIP LOCKED
            )
            UPDATE pgpush.notifications n SET
                status       = CASE WHEN n.expires_at <= now() THEN 'expired'
                                    WHEN n.attempts >= $1 THEN 'failed'
                                    ELSE 'queued' END,
                last_reason  = CASE WHEN n.expires_at <= now() THEN 'Expired'
                                    WHEN n.attempts >= $1 THEN 'LeaseExpired'
                                    ELSE n.last_reason END,
                finished_at  = CASE WHEN n.expires_at <= now() OR n.attempts >= $1 THEN now() END,
                locked_by    = NULL,
                locked_until = NULL,
                updated_at   = now()
              FROM stale
             WHERE n.id = stale.id
            """, [maxAttempts, limit, workerID, holding])
        return result.affectedRows
    }
}

extension Duration {
    /// Seconds as a Double, for `make_interval(secs => …)`.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
