import APNsCore
import Foundation
import PGPushCore
import PGPushTestSupport
import Postgres
import PushQueue
import Testing

@Suite struct NotificationQueueTests {
    static let token = String(repeating: "ef", count: 32)

    private func insert(_ connection: PostgresConnection, count: Int, app: String = "default", token: String = Self.token,
                        sendAfter: String = "now()", expiresAt: String = "NULL") throws -> [Int64] {
        let result = try connection.query("""
            INSERT INTO pgpush.notifications (app, device_token, payload, send_after, expires_at)
            SELECT $1, $2, jsonb_build_object('aps', jsonb_build_object('alert', 'n' || i)), \(sendAfter), \(expiresAt)
              FROM generate_series(1, $3) AS i
            RETURNING id
            """, [app, token, count])
        return (0..<result.rowCount).compactMap { result.int64($0, 0) }
    }

    private func statuses(_ connection: PostgresConnection) throws -> [String: Int] {
        let result = try connection.query("SELECT status, count(*) FROM pgpush.notifications GROUP BY status")
        var counts: [String: Int] = [:]
        for row in 0..<result.rowCount { counts[result.string(row, 0) ?? "?"] = result.int(row, 1) }
        return counts
    }

    @Test func claimsDueRowsOldestFirstWithALease() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        let later = try insert(connection, count: 3, sendAfter: "now() + interval '1 hour'")
        let older = try insert(connection, count: 3, sendAfter: "now() - interval '1 minute'")
        let newer = try insert(connection, count: 3)
        let otherApp = try insert(connection, count: 2, app: "other")
        let queue = NotificationQueue(connection: try PostgresConnection(conninfo: conninfo), workerID: "w1")

        let first = try queue.claim(app: "default", limit: 4, lease: .seconds(30))
        #expect(first.claimed.map(\.id) == older + [newer[0]])
        #expect(first.claimed.allSatisfy { $0.attempts == 1 && $0.claimCount == 1 })
        let claimedRow = try #require(first.claimed.first)
        #expect(claimedRow.notification.deviceToken == Self.token)
        #expect(claimedRow.notification.pushType == "alert")
        #expect(claimedRow.notification.app == "default")
        #expect(try Payload(validating: claimedRow.notification.payload, for: .alert).bytes.count > 0)

        let second = try queue.claim(app: "default", limit: 100, lease: .seconds(30))
        #expect(second.claimed.map(\.id) == Array(newer.dropFirst()))
        #expect(try queue.claim(app: "default", limit: 100, lease: .seconds(30)).claimed.isEmpty)

        let lease = try connection.query("""
            SELECT count(*) FILTER (WHERE locked_by = 'w1' AND locked_until > now() + interval '20 seconds'),
                   count(*) FILTER (WHERE status = 'queued')
              FROM pgpush.notifications
            """)
        #expect(lease.int(0, 0) == 6)
        #expect(lease.int(0, 1) == later.count + otherApp.count)
    }

    @Test func rowsPastExpiryBecomeExpiredInsteadOfClaimed() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        let stale = try insert(connection, count: 2, expiresAt: "now() - interval '1 second'")
        let fresh = try insert(connection, count: 2, expiresAt: "now() + interval '1 hour'")
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        let result = try queue.claim(app: "default", limit: 10, lease: .seconds(30))
        #expect(result.claimed.map(\.id) == fresh)
        #expect(result.expiredIDs.sorted() == stale)
        #expect(result.claimed.allSatisfy { $0.notification.expiration != nil })
        let expired = try connection.query("""
            SELECT count(*) FROM pgpush.notifications
             WHERE status = 'expired' AND attempts = 0 AND finished_at IS NOT NULL AND last_reason = 'Expired' AND locked_by IS NULL
            """)
        #expect(expired.int(0, 0) == 2)
    }

    @Test func concurrentClaimersNeverShareARow() async throws {
        let conninfo = try TestDatabase.migrated()
        let setup = try PostgresConnection(conninfo: conninfo)
        let total = 3000
        _ = try insert(setup, count: total)
        let perWorker = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for worker in 0..<3 {
                group.addTask {
                    let queue = NotificationQueue(connection: try PostgresConnection(conninfo: conninfo), workerID: "w\(worker)")
                    var mine: [Int64] = []
                    while true {
                        let batch = try queue.claim(app: "default", limit: 25, lease: .seconds(60))
                        if batch.claimed.isEmpty { return mine }
                        mine += batch.claimed.map(\.id)
                        try queue.complete(batch.claimed.map { .delivered($0) })
                    }
                }
            }
            return try await group.reduce(into: [[Int64]]()) { $0.append($1) }
        }
        let all = perWorker.flatMap { $0 }
        #expect(all.count == total)
        #expect(Set(all).count == total)
        #expect(try statuses(setup) == ["delivered": total])
    }

    @Test func expiredLeaseGoesToAnotherWorkerAndTheStaleWriteIsRefused() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        let ids = try insert(connection, count: 2)
        let stale = NotificationQueue(connection: try PostgresConnection(conninfo: conninfo), workerID: "dying")
        let rescuer = NotificationQueue(connection: try PostgresConnection(conninfo: conninfo), workerID: "alive")

        // A zero lease ends with the claim's transaction: the next statement sees it expired.
        let lost = try stale.claim(app: "default", limit: 10, lease: .zero).claimed
        #expect(lost.map(\.id) == ids)
        #expect(try rescuer.claim(app: "default", limit: 10, lease: .seconds(30)).claimed.isEmpty)
        #expect(try rescuer.rescueExpiredLeases(maxAttempts: 5) == 2)

        let taken = try rescuer.claim(app: "default", limit: 10, lease: .seconds(30)).claimed
        #expect(taken.map(\.id) == ids)
        #expect(taken.allSatisfy { $0.claimCount == 2 && $0.attempts == 2 })

        // The stale worker finishes late, before and after the new holder writes: both refused.
        let lateFailure = lost.map { Outcome(id: $0.id, claimCount: $0.claimCount, disposition: .failed, httpStatus: 400,
                                             reason: "BadDeviceToken", recordsError: true, invalidatesToken: true) }
        #expect(try stale.complete([lateFailure[0]]).isEmpty)
        #expect(try rescuer.complete(taken.map { .delivered($0) }) == Set(ids))
        #expect(try stale.complete(lateFailure).isEmpty)
        #expect(try statuses(connection) == ["delivered": 2])
        #expect(try connection.query("SELECT count(*) FROM pgpush.delivery_errors").int(0, 0) == 0)
        #expect(try connection.query("SELECT count(*) FROM pgpush.invalid_tokens").int(0, 0) == 0)
    }

    @Test func sameWorkerReclaimingRefusesItsOwnOlderClaim() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        _ = try insert(connection, count: 1)
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        let rescuer = NotificationQueue(connection: try PostgresConnection(conninfo: conninfo), workerID: "rescuer")
        let firstClaim = try #require(try queue.claim(app: "default", limit: 1, lease: .zero).claimed.first)
        #expect(try queue.rescueExpiredLeases(maxAttempts: 5) == 0, "a worker never rescues its own rows")
        try rescuer.rescueExpiredLeases(maxAttempts: 5)
        let secondClaim = try #require(try queue.claim(app: "default", limit: 1, lease: .seconds(30)).claimed.first)
        #expect(try queue.complete([Outcome(id: firstClaim.id, claimCount: firstClaim.claimCount, disposition: .failed,
                                            httpStatus: 500, reason: "InternalServerError")]).isEmpty)
        #expect(try queue.complete([.delivered(secondClaim)]) == [secondClaim.id])
    }

    @Test func rescueFailsRowsThatUsedAllTheirAttemptsAndExpiresStaleOnes() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        let poison = try insert(connection, count: 1)
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        let rescuer = NotificationQueue(connection: try PostgresConnection(conninfo: conninfo), workerID: "rescuer")
        for _ in 0..<3 {
            #expect(try queue.claim(app: "default", limit: 1, lease: .zero).claimed.map(\.id) == poison)
            try rescuer.rescueExpiredLeases(maxAttempts: 3)
        }
        let row = try connection.query("SELECT status, last_reason, attempts, finished_at IS NOT NULL FROM pgpush.notifications")
        #expect(row.string(0, 0) == "failed")
        #expect(row.string(0, 1) == "LeaseExpired")
        #expect(row.int(0, 2) == 3)
        #expect(row.bool(0, 3) == true)

        let expiring = try insert(connection, count: 1, expiresAt: "now() + interval '50 milliseconds'")
        #expect(try queue.claim(app: "default", limit: 1, lease: .zero).claimed.map(\.id) == expiring)
        try connection.query("UPDATE pgpush.notifications SET expires_at = now() - interval '1 second' WHERE id = $1", [expiring[0]])
        try rescuer.rescueExpiredLeases(maxAttempts: 3)
        #expect(try connection.query("SELECT status FROM pgpush.notifications WHERE id = $1", [expiring[0]]).string(0, 0) == "expired")
    }

    @Test func completesTenThousandOutcomesInOneCall() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        _ = try insert(connection, count: 10_000)
        let queue = NotificationQueue(connection: connection, workerID: "bulk")
        let claimed = try queue.claim(app: "default", limit: 10_000, lease: .seconds(60)).claimed
        #expect(claimed.count == 10_000)
        let outcomes: [Outcome] = claimed.enumerated().map { index, row in
            switch index % 4 {
            case 0: return .delivered(row)
            case 1: return Outcome(id: row.id, claimCount: row.claimCount, disposition: .failed, httpStatus: 410,
                                   reason: "Unregistered", recordsError: true, invalidatesToken: true,
                                   appleTimestamp: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)))
            case 2: return Outcome(id: row.id, claimCount: row.claimCount, disposition: .retry(after: .seconds(3), countsAsAttempt: true),
                                   httpStatus: 503, reason: "ServiceUnavailable", recordsError: true)
            default: return .released(row)
            }
        }
        let written = try queue.complete(outcomes)
        #expect(written.count == 10_000)
        #expect(try statuses(connection) == ["delivered": 2500, "failed": 2500, "queued": 5000])
        let retried = try connection.query("""
            SELECT count(*) FROM pgpush.notifications
             WHERE status = 'queued' AND last_status = 503 AND attempts = 1
               AND send_after = updated_at + interval '3 seconds'
            """)
        // Three seconds from the write itself (both are its now()), however late this query runs.
        #expect(retried.int(0, 0) == 2500)
        let released = try connection.query("""
            SELECT count(*) FROM pgpush.notifications
             WHERE status = 'queued' AND last_status IS NULL AND attempts = 0 AND send_after <= now() AND locked_by IS NULL
            """)
        #expect(released.int(0, 0) == 2500)
        #expect(try connection.query("SELECT count(*) FROM pgpush.delivery_errors").int(0, 0) == 5000)
        // Every row had the same token: one invalid-token row, with Apple's latest timestamp.
        let invalid = try connection.query("SELECT device_token, reason, extract(epoch FROM apple_timestamp)::bigint FROM pgpush.invalid_tokens")
        #expect(invalid.rowCount == 1)
        #expect(invalid.string(0, 0) == Self.token)
        #expect(invalid.string(0, 1) == "Unregistered")
        #expect(invalid.int64(0, 2) == Int64(1_700_009_997))
    }

    @Test func aBatchOfDeliveriesWritesWhatTheGeneralStatementWrites() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        _ = try insert(connection, count: 4)
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        let claimed = try queue.claim(app: "default", limit: 4, lease: .seconds(60)).claimed
        #expect(claimed.count == 4)
        // Deliveries alone take the lean statement; next to a failure, the general one.
        #expect(try queue.complete([.delivered(claimed[0])]) == [claimed[0].id])
        let failure = Outcome(id: claimed[2].id, claimCount: claimed[2].claimCount, disposition: .failed,
                              httpStatus: 400, reason: "BadDeviceToken", recordsError: true)
        #expect(try queue.complete([.delivered(claimed[1]), failure]) == [claimed[1].id, claimed[2].id])
        // A lease no longer held (another claim since) is left alone by either.
        var stale = Outcome.delivered(claimed[3])
        stale.claimCount += 1
        #expect(try queue.complete([stale]).isEmpty)

        let columns = """
            SELECT status, last_status, coalesce(last_reason, '-'), attempts, finished_at IS NOT NULL,
                   coalesce(locked_by, '-'), locked_until IS NULL, send_after <= now(), updated_at >= created_at
              FROM pgpush.notifications WHERE id = $1
            """
        func row(_ id: Int64) throws -> [String] {
            let result = try connection.query(columns, [id])
            return (0..<9).map { result.string(0, $0) ?? "NULL" }
        }
        let lean = try row(claimed[0].id)
        #expect(lean == ["delivered", "200", "-", "1", "t", "-", "t", "t", "t"])
        #expect(try row(claimed[1].id) == lean)
        #expect(try row(claimed[3].id).first == "sending")
        #expect(try connection.query("SELECT count(*) FROM pgpush.delivery_errors").int(0, 0) == 1)
    }

    @Test func deliverOnceTravelsFromEnqueueToTheClaim() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        let payload = #"{"aps":{"alert":"x"}}"#
        let once = try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => $2::jsonb, deliver_once => true)",
                                        [Self.token, payload]).int64(0, 0)
        let stored = try connection.query("SELECT pgpush.enqueue_many(device_tokens => $1, payload => $2::jsonb, deliver_once => false)",
                                          [[Self.token], payload]).int64(0, 0)
        let derived = try connection.query("SELECT pgpush.enqueue(device_token => $1, payload => $2::jsonb)", [Self.token, payload]).int64(0, 0)
        // By position, as before deliver_once existed: the ten old arguments still make a call.
        let positional = try connection.query("""
            SELECT pgpush.enqueue($1, $2::jsonb, 'default', 'alert', NULL, NULL, NULL, NULL, now(), 'old-call')
            """, [Self.token, payload]).int64(0, 0)
        let claimed = try NotificationQueue(connection: connection, workerID: "w1").claim(app: "default", limit: 10, lease: .seconds(30))
        let deliverOnce = Dictionary(uniqueKeysWithValues: claimed.claimed.map { ($0.id, $0.notification.deliverOnce) })
        #expect(deliverOnce.count == 4)
        #expect(deliverOnce[try #require(once)] == .some(true))
        #expect(deliverOnce[try #require(stored)] == .some(false))
        #expect(deliverOnce[try #require(derived)] == .some(nil))
        #expect(deliverOnce[try #require(positional)] == .some(nil))
    }

    @Test func apnsUniqueIDIsTheLastAnswersOnTheRowAndOnItsErrorRow() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        _ = try insert(connection, count: 3)
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        let rows = try queue.claim(app: "default", limit: 3, lease: .seconds(60)).claimed
        let (delivered, failed, retried) = (rows[0], rows[1], rows[2])
        let ids = (0..<4).map { _ in UUID() }
        func uniqueID(_ id: Int64) throws -> UUID? {
            try connection.query("SELECT apns_unique_id FROM pgpush.notifications WHERE id = $1", [id]).uuid(0, 0)
        }

        // Deliveries alone take the lean statement; the others, the general one.
        var accepted = Outcome.delivered(delivered)
        accepted.apnsUniqueID = ids[0]
        #expect(try queue.complete([accepted]) == [delivered.id])
        #expect(try queue.complete([
            Outcome(id: failed.id, claimCount: failed.claimCount, disposition: .failed, httpStatus: 400,
                    reason: "BadDeviceToken", recordsError: true, apnsUniqueID: ids[1]),
            Outcome(id: retried.id, claimCount: retried.claimCount, disposition: .retry(after: .zero, countsAsAttempt: true),
                    httpStatus: 503, reason: "ServiceUnavailable", recordsError: true, apnsUniqueID: ids[2]),
        ]).count == 2)
        #expect(try uniqueID(delivered.id) == ids[0])
        #expect(try uniqueID(failed.id) == ids[1])
        #expect(try uniqueID(retried.id) == ids[2])
        let errors = try connection.query("SELECT notification_id, apns_unique_id FROM pgpush.delivery_errors ORDER BY notification_id")
        #expect(errors.rowCount == 2)
        #expect(errors.int64(0, 0) == failed.id && errors.uuid(0, 1) == ids[1])
        #expect(errors.int64(1, 0) == retried.id && errors.uuid(1, 1) == ids[2])

        // Released with nothing learned: the last answer's id stays.
        let again = try #require(try queue.claim(app: "default", limit: 1, lease: .seconds(60)).claimed.first)
        #expect(again.id == retried.id)
        try queue.complete([.released(again)])
        #expect(try uniqueID(retried.id) == ids[2])
        // An answer without the header clears it: the column is the last answer's, not the last one seen.
        let last = try #require(try queue.claim(app: "default", limit: 1, lease: .seconds(60)).claimed.first)
        #expect(try queue.complete([.delivered(last)]) == [last.id])
        #expect(try uniqueID(retried.id) == nil)
    }

    @Test func knownInvalidTokensFailAtClaimWithoutBeingSent() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        let unregistered = String(repeating: "a1", count: 32), expired = String(repeating: "b2", count: 32)
        let bad = String(repeating: "c3", count: 32), elsewhere = String(repeating: "d4", count: 32)
        // invalid_tokens holds lower case, as the worker writes it; the queue row keeps the case it was given.
        try connection.query("""
            INSERT INTO pgpush.invalid_tokens (app, device_token, reason)
            VALUES ('default', $1, 'Unregistered'), ('default', $2, 'ExpiredToken'), ('default', $3, 'BadDeviceToken'),
                   ('other', $4, 'Unregistered')
            """, [unregistered, expired, bad, elsewhere])
        let deadIDs = try insert(connection, count: 1, token: unregistered.uppercased())
            + insert(connection, count: 1, token: expired)
        let liveIDs = try insert(connection, count: 1, token: bad) + insert(connection, count: 1, token: elsewhere)
        let lateIDs = try insert(connection, count: 1, token: unregistered, expiresAt: "now() - interval '1 second'")
        let queue = NotificationQueue(connection: connection, workerID: "w1")

        let result = try queue.claim(app: "default", limit: 10, lease: .seconds(30))
        #expect(result.claimed.map(\.id) == liveIDs)
        #expect(result.knownInvalidIDs.sorted() == deadIDs)
        #expect(result.expiredIDs == lateIDs, "a row past its expiry ends expired, whatever its token")
        let finished = try connection.query("""
            SELECT count(*) FROM pgpush.notifications
             WHERE id = ANY($1) AND status = 'failed' AND last_reason = 'KnownInvalidToken' AND last_status IS NULL
               AND finished_at IS NOT NULL AND attempts = 0 AND locked_by IS NULL AND locked_until IS NULL
            """, [deadIDs])
        #expect(finished.int(0, 0) == 2)
        let errors = try connection.query("""
            SELECT notification_id, status IS NULL, reason, attempt, worker_id FROM pgpush.delivery_errors ORDER BY notification_id
            """)
        #expect(errors.rowCount == 2)
        for row in 0..<errors.rowCount {
            #expect(errors.int64(row, 0) == deadIDs[row])
            #expect(errors.bool(row, 1) == true && errors.string(row, 2) == "KnownInvalidToken")
            #expect(errors.int(row, 3) == 0 && errors.string(row, 4) == "w1")
        }

        // The app may want every row sent anyway.
        let forced = try insert(connection, count: 1, token: unregistered)
        #expect(try queue.claim(app: "default", limit: 10, lease: .seconds(30), skipKnownInvalidTokens: false).claimed.map(\.id) == forced)

        // Registered again (in any case): later rows for it are sent.
        #expect(try connection.query("SELECT pgpush.token_registered('default', $1)", [expired.uppercased()]).bool(0, 0) == true)
        #expect(try connection.query("SELECT pgpush.token_registered('default', $1)", [expired]).bool(0, 0) == false)
        let revived = try insert(connection, count: 1, token: expired)
        let stillDead = try insert(connection, count: 1, token: unregistered)
        let after = try queue.claim(app: "default", limit: 10, lease: .seconds(30))
        #expect(after.claimed.map(\.id) == revived)
        #expect(after.knownInvalidIDs == stillDead)
        #expect(try connection.query("SELECT count(*) FROM pgpush.invalid_tokens").int(0, 0) == 3)
    }

    /// The token check must stay a probe of `invalid_tokens`' primary key per claimed row:
    /// planned another way (EXISTS, a join) PostgreSQL reads the whole list on every claim.
    @Test func claimProbesInvalidTokensByIndexPerRow() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        try connection.query("""
            INSERT INTO pgpush.notifications (device_token, payload)
            SELECT lpad(to_hex(g), 64, '0'), '{"aps":{"alert":"x"}}' FROM generate_series(1, $1::int) AS g
            """, [20_000])
        try connection.query("""
            INSERT INTO pgpush.invalid_tokens (app, device_token, reason)
            SELECT 'default', lpad(to_hex(g * 3), 64, '0'), 'Unregistered' FROM generate_series(1, $1::int) AS g
            """, [20_000])
        try connection.execute(script: "ANALYZE pgpush.notifications; ANALYZE pgpush.invalid_tokens")
        // The plans pgpush.claim keeps, as they ran (auto_explain).
        let plan = try NotificationQueue(connection: connection, workerID: "w1")
            .explainClaim(app: "default", limit: 1000, lease: .seconds(30)).joined(separator: "\n")
        #expect(plan.contains("Index Scan using notifications_queued_due"), "\(plan)")
        #expect(plan.contains("Index Scan using invalid_tokens_pkey"), "\(plan)")
        #expect(!plan.contains("Seq Scan on invalid_tokens"), "\(plan)")
    }

    /// A claim that looks back reads the due rows' index from where new rows can be, past the
    /// dead entries claimed rows leave at its head until vacuum (a bound of the index scan,
    /// not a filter), and leaves older rows to a claim that reads them all.
    @Test func aClaimLooksBackOnlyAsFarAsItIsTold() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        // 2,000 rows claimed a minute ago leave their dead entries at the index's head.
        _ = try insert(connection, count: 2_000, sendAfter: "now() - interval '1 minute'")
        #expect(try queue.claim(app: "default", limit: 2_000, lease: .seconds(60)).claimed.count == 2_000)
        let old = try insert(connection, count: 1, sendAfter: "now() - interval '30 seconds'")
        let new = try insert(connection, count: 1)

        var claimed: [Int64] = []
        let plan = try queue.explained {
            claimed = try queue.claim(app: "default", limit: 10, lease: .seconds(60), lookBack: .seconds(10)).claimed.map(\.id)
        }.joined(separator: "\n")
        #expect(claimed == new)
        let scan = plan.split(separator: "\n").drop { !$0.contains("Index Scan using notifications_queued_due") }
        #expect(scan.dropFirst().first?.contains("Index Cond: ") == true && scan.dropFirst().first?.contains("send_after >=") == true,
                "\(plan)")
        #expect(try queue.claim(app: "default", limit: 10, lease: .seconds(60)).claimed.map(\.id) == old)
    }

    /// The outcome functions keep one plan for every batch size: a large batch is hashed
    /// against the rows it names, found by id through the primary key. Planned for the few
    /// rows a kept plan assumes, it compared every outcome with every row in flight
    /// (4 million comparisons for 2,000) and read the rows in flight through their own index.
    @Test func aLargeOutcomeBatchIsHashedAgainstTheRowsItNames() throws {
        let connection = try PostgresConnection(conninfo: try TestDatabase.migrated())
        _ = try insert(connection, count: 2_000)
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        let claimed = try queue.claim(app: "default", limit: 2_000, lease: .seconds(60)).claimed
        #expect(claimed.count == 2_000)
        // The first batch, of one, makes the plan, as at a steady low rate.
        #expect(try queue.complete([.delivered(claimed[0])]) == [claimed[0].id])
        var written: Set<Int64> = []
        let plan = try queue.explained { written = try queue.complete(claimed.dropFirst().map(Outcome.delivered)) }
            .joined(separator: "\n")
        #expect(written.count == 1_999)
        let byID = plan.split(separator: "\n").contains { $0.contains("Index Cond: ") && $0.contains("(id = ANY") }
        #expect(plan.contains("Hash Join") && byID, "\(plan)")
        #expect(!plan.contains("Join Filter") && !plan.contains("notifications_sending_lease"), "\(plan)")
        #expect(!plan.contains("JIT"), "\(plan)")
    }

    @Test func renewingKeepsOnlyLeasesStillHeld() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        _ = try insert(connection, count: 3)
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        let claimed = try queue.claim(app: "default", limit: 3, lease: .seconds(1)).claimed
        try queue.complete([.delivered(claimed[0])])
        let renewed = try queue.renewLeases(ids: claimed.map(\.id), lease: .seconds(120))
        #expect(renewed == Set(claimed.dropFirst().map(\.id)))
        let held = try connection.query("SELECT count(*) FROM pgpush.notifications WHERE locked_until > now() + interval '100 seconds'")
        #expect(held.int(0, 0) == 2)
    }

    /// Control characters in topic and collapse id are refused at INSERT since migration 006
    /// (BadInputTests); quotes and SQL in them and in the payload still travel as data.
    @Test func hostileRowContentNeverBreaksTheClaimForOthers() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        try connection.query("""
            INSERT INTO pgpush.notifications (device_token, payload, topic, collapse_id, push_type, priority)
            VALUES ($1, $2::jsonb, $3, $4, 'alert', 1)
            """, [Self.token, #"{"aps":{"alert":"'); DROP TABLE pgpush.notifications; --\u0001?\u001b[31m"},"n":1e400}"#,
                  "com.example'; SELECT 1 --", "[2J\"'--"])
        _ = try insert(connection, count: 2)
        let claimed = try NotificationQueue(connection: connection, workerID: "w1").claim(app: "default", limit: 10, lease: .seconds(30))
        #expect(claimed.claimed.count == 3)
        #expect(claimed.claimed[0].notification.topic == "com.example'; SELECT 1 --")
        #expect(claimed.claimed[0].notification.collapseID == "[2J\"'--")
    }
}

@Suite struct AppHealthTests {
    @Test func theWholeAppAndEachTopicHaveTheirOwnRow() throws {
        let conninfo = try TestDatabase.migrated()
        let connection = try PostgresConnection(conninfo: conninfo)
        let queue = NotificationQueue(connection: connection, workerID: "w1")
        func rows() throws -> [String: [String]] {
            let result = try connection.query("""
                SELECT coalesce(topic, '(app)'), healthy, coalesce(reason, '-'), since FROM pgpush.app_health WHERE app = 'shop'
                """)
            return Dictionary(uniqueKeysWithValues: (0..<result.rowCount).map { row in
                (result.string(row, 0) ?? "", (1...3).map { result.string(row, $0) ?? "NULL" })
            })
        }

        try queue.reportAppHealth(app: "shop", healthy: true, reason: nil)
        try queue.reportAppHealth(app: "shop", topic: "com.x.voip", healthy: false, reason: "TopicDisallowed")
        try queue.reportAppHealth(app: "other", topic: "com.x.voip", healthy: true, reason: nil)
        let first = try rows()
        #expect(first.keys.sorted() == ["(app)", "com.x.voip"])
        #expect(first["(app)"]?.prefix(2) == ["t", "-"])
        #expect(first["com.x.voip"]?.prefix(2) == ["f", "TopicDisallowed"])

        // A report for the app leaves the topic's row alone, and the other way round.
        try queue.reportAppHealth(app: "shop", healthy: false, reason: "InvalidProviderToken")
        let second = try rows()
        #expect(second["(app)"]?.prefix(2) == ["f", "InvalidProviderToken"])
        #expect(second["com.x.voip"] == first["com.x.voip"])
        try queue.reportAppHealth(app: "shop", topic: "com.x.voip", healthy: true, reason: nil)
        let third = try rows()
        #expect(third["(app)"] == second["(app)"])
        #expect(third["com.x.voip"]?.prefix(2) == ["t", "-"])
        #expect(try connection.query("SELECT count(*) FROM pgpush.app_health").int(0, 0) == 3)
        let empty = try #require(throws: PostgresError.self) {
            try queue.reportAppHealth(app: "shop", topic: "", healthy: true, reason: nil)
        }
        #expect(empty.constraint == "app_health_topic_empty")
    }
}
