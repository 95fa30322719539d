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
package final class NotificationQueue {
    package let connection: PostgresConnection
    package let workerID: String

    /// The lowest id a claim looks at (pgpush.history_partitioning.claim_from_id), read
    /// again every `claimFromRefresh`; see `claimFrom()`.
    private var claimFromID: (id: Int64, readAt: ContinuousClock.Instant)?
    static let claimFromRefresh: Duration = .seconds(10)

    package init(connection: PostgresConnection, workerID: String) {
        self.connection = connection
        self.workerID = workerID
    }

    // MARK: Claim

    /// Claims up to `limit` due rows of `app` for `service`, oldest first, skipping rows
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
    /// `lookBack`: only rows whose `send_after` is at most that long ago (nil: every due row).
    package func claim(app: String, service: Service = .apns, limit: Int, lease: Duration, skipKnownInvalidTokens: Bool = true,
                      lookBack: Duration? = nil) throws -> ClaimResult {
        let result = try connection.query(Self.claimSQL, [workerID, app, service.rawValue, limit, lease.seconds,
                                                          skipKnownInvalidTokens, try claimFrom(), lookBack?.seconds])
        // Columns as pgpush.claim returns them (sql/019_claim_says_lane.sql).
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
                service: service,
                deviceToken: result.string(row, 4) ?? "",
                pushType: result.string(row, 5) ?? "",
                priority: result.int(row, 6),
                topic: result.string(row, 7),
                payload: result.bytes(row, 8) ?? [],
                collapseID: result.string(row, 9),
                expiration: result.int64(row, 10),
                deliverOnce: result.bool(row, 12),
                apnsID: (result.withBytes(row, 11, UUID.init(canonicalText:)) ?? nil) ?? UUID(),
                channelID: result.string(row, 13),
                subscription: result.bytes(row, 14),
                // Before migration 019 the claim had no lane column: all rows wait alike.
                lane: result.string(row, 15).flatMap(Lane.init(rawValue:)) ?? .unnamed
            )
            claimed.append(ClaimedNotification(
                notification: notification, claimCount: result.int(row, 2) ?? 0, attempts: result.int(row, 3) ?? 0))
        }
        // The sends start in claim order: lane by lane, then by id.
        claimed.sort { ($0.notification.lane, $0.id) < ($1.notification.lane, $1.id) }
        return ClaimResult(claimed: claimed, expiredIDs: expired, knownInvalidIDs: knownInvalid)
    }

    /// No row below this id is queued or sending. Passed to the claim as a value (not read
    /// inside it), so that PostgreSQL leaves the partitions below it out of the plan: planning
    /// a claim over every partition of a long history costs more than the claim itself
    /// (42 ms instead of 4 ms with 80 partitions, measured). The leader raises the mark
    /// every 10 minutes; a value read up to 10 s ago is at most lower, which only costs
    /// a few more partitions in the plan.
    package func claimFrom() throws -> Int64 {
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

    /// The claim: pgpush.claim (sql/019_claim_says_lane.sql; why it is written as it is: 011, 014, 018).
    /// Parameters: worker id, app, service, limit, lease seconds, skip known-invalid tokens,
    /// lowest id (`claimFrom()`), look-back seconds.
    package static let claimSQL = "SELECT * FROM pgpush.claim($1, $2, $3, $4, $5, $6, $7, $8)"

    /// The plans of a claim's statements inside pgpush.claim, as EXPLAIN ANALYZE prints them
    /// (auto_explain, loaded for this session: superuser only). The claim is made for real.
    package func explainClaim(app: String, limit: Int, lease: Duration) throws -> [String] {
        try explained { _ = try claim(app: app, limit: limit, lease: lease) }
    }

    /// The plans of every statement `body` runs on this queue's connection, nested ones (inside
    /// the queue functions) included, as EXPLAIN ANALYZE prints them (auto_explain; superuser
    /// only), without the plans of the function calls themselves.
    package func explained(_ body: () throws -> Void) throws -> [String] {
        try connection.execute(script: """
            LOAD 'auto_explain';
            SET auto_explain.log_min_duration = 0;
            SET auto_explain.log_nested_statements = on;
            SET auto_explain.log_analyze = on;
            SET auto_explain.log_buffers = on;
            SET auto_explain.log_timing = off;
            SET client_min_messages = log;
            """)
        defer { try? connection.execute(script: "RESET client_min_messages; RESET auto_explain.log_min_duration") }
        let (_, messages) = try connection.collectingMessages(body)
        return messages.filter { !$0.contains("Query Text: SELECT * FROM pgpush.") && !$0.contains("Query Text: SELECT pgpush.") }
    }

    // MARK: Outcomes

    /// Writes a batch of outcomes in one round trip: row statuses, error rows
    /// and invalid tokens. Returns the ids whose lease still held; the others
    /// were taken over (or cancelled) and are left as they are.
    @discardableResult
    package func complete(_ outcomes: [Outcome]) throws -> Set<Int64> {
        guard !outcomes.isEmpty else { return [] }
        if outcomes.allSatisfy(\.isPlainDelivery) { return try completeDeliveries(outcomes) }
        var ids: [Int64] = [], claims: [Int] = [], statuses: [String] = [], httpStatuses: [Int?] = []
        var reasons: [String?] = [], delays: [Double?] = [], refunds: [Int] = [], answered: [Bool] = []
        var recordsError: [Bool] = [], invalidates: [Bool] = [], appleTimestamps: [Double?] = []
        var uniqueIDs: [UUID?] = [], messageIDs: [String?] = [], details: [String?] = []
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
            messageIDs.append(outcome.messageID)
            details.append(outcome.detail)
        }
        let result = try connection.query(Self.completeSQL, [
            workerID, ids, claims, statuses, httpStatuses, reasons, delays, refunds, answered,
            recordsError, invalidates, appleTimestamps, uniqueIDs, messageIDs, details,
        ])
        return Self.ids(in: result)
    }

    /// The common batch, every row accepted with nothing to record beyond it: four arrays
    /// instead of fourteen, and none of the general statement's joins for error rows and
    /// invalid tokens, which PostgreSQL runs even when they find nothing. It writes what
    /// `completeSQL` writes for such rows.
    private func completeDeliveries(_ outcomes: [Outcome]) throws -> Set<Int64> {
        var ids: [Int64] = [], claims: [Int] = [], uniqueIDs: [UUID?] = [], messageIDs: [String?] = []
        ids.reserveCapacity(outcomes.count)
        claims.reserveCapacity(outcomes.count)
        uniqueIDs.reserveCapacity(outcomes.count)
        messageIDs.reserveCapacity(outcomes.count)
        for outcome in outcomes {
            ids.append(outcome.id)
            claims.append(outcome.claimCount)
            uniqueIDs.append(outcome.apnsUniqueID)
            messageIDs.append(outcome.messageID.map { Outcome.storableText($0) })
        }
        let result = try connection.query(Self.completeDeliveriesSQL, [workerID, ids, claims, uniqueIDs, messageIDs])
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

    /// pgpush.complete_deliveries and pgpush.complete (sql/015_services.sql).
    static let completeDeliveriesSQL = "SELECT * FROM pgpush.complete_deliveries($1, $2, $3, $4, $5)"
    static let completeSQL = "SELECT * FROM pgpush.complete($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"

    // MARK: Leases

    /// Extends the lease of rows still in flight; returns the ids still held.
    @discardableResult
    package func renewLeases(ids: [Int64], lease: Duration) throws -> Set<Int64> {
        guard !ids.isEmpty else { return [] }
        let result = try connection.query("SELECT * FROM pgpush.renew_leases($1, $2, $3)", [workerID, ids, lease.seconds])
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
    package func rescueExpiredLeases(maxAttempts: Int, limit: Int = 1000, holding: [Int64]? = nil) throws -> Int {
        let result = try connection.query("SELECT pgpush.rescue_expired_leases($1, $2, $3, $4)",
                                          [maxAttempts, limit, workerID, holding])
        return result.int(0, 0) ?? 0
    }
}

extension Duration {
    /// Seconds as a Double, for `make_interval(secs => …)`.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
