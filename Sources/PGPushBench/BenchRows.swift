import Foundation
import PGPushCore
import Postgres

/// Rows for the scenarios: unique hex tokens, one payload of a chosen size.
package enum BenchRows {
    /// `{"aps":{"alert":"xxx…"}}` of exactly `bytes` bytes (at least the empty alert's size).
    package static func payload(bytes: Int) -> String {
        let frame = #"{"aps":{"alert":""}}"#
        return #"{"aps":{"alert":""# + String(repeating: "x", count: max(0, bytes - frame.utf8.count)) + #""}}"#
    }

    /// A Live Activity update of exactly `bytes` bytes (at least its empty state's size).
    package static func liveActivityPayload(bytes: Int) -> String {
        let frame = #"{"aps":{"event":"update","timestamp":1764583200,"content-state":{"s":""}}}"#
        return #"{"aps":{"event":"update","timestamp":1764583200,"content-state":{"s":""#
            + String(repeating: "x", count: max(0, bytes - frame.utf8.count)) + #""}}}"#
    }

    package static func token(_ number: Int) -> String { String(format: "%064x", number) }

    /// An FCM data message of exactly `bytes` bytes (at least its empty form's size).
    package static func fcmPayload(bytes: Int) -> String {
        let frame = #"{"data":{"k":""}}"#
        return #"{"data":{"k":""# + String(repeating: "x", count: max(0, bytes - frame.utf8.count)) + #""}}"#
    }

    /// `count` broadcast channel ids (base64 of "bench-channel-N").
    package static func channels(_ count: Int) -> [String] {
        (1...max(count, 1)).map { Data("bench-channel-\($0)".utf8).base64EncodedString() }
    }

    /// Inserts `count` due rows in batches of one statement each, reporting progress, then
    /// ANALYZEs the table unless told not to (the insert phase is measured without it).
    /// With `broadcastEvery` n > 0, every n-th row is a Live Activity update (priority 5) to
    /// one of `channels` in turn instead of an alert to a token.
    /// `service` `.fcm`: FCM rows to registration tokens `bench-token:N`, with an FCM data payload;
    /// `.webpush`: Web Push rows to `subscriptions` in turn.
    package static func fill(_ connection: PostgresConnection, count: Int, payloadBytes: Int, firstToken: Int = 1,
                            broadcastEvery: Int = 0, channels: [String] = [], service: Service = .apns,
                            subscriptions: [String] = [], analyze: Bool = true, progress: (Int) -> Void = { _ in }) throws {
        let batch = 50_000
        var done = 0
        while done < count {
            let size = min(batch, count - done)
            if service == .webpush {
                try connection.query("""
                    INSERT INTO pgpush.notifications (service, subscription, payload)
                    SELECT 'webpush', ($4::text[])[1 + g % cardinality($4::text[])]::jsonb, $1::jsonb
                      FROM generate_series($2::bigint, $3::bigint) AS g
                    """, [payload(bytes: payloadBytes), firstToken + done, firstToken + done + size - 1, subscriptions])
                done += size
                progress(done)
                continue
            }
            if service == .fcm {
                try connection.query("""
                    INSERT INTO pgpush.notifications (service, device_token, payload)
                    SELECT 'fcm', 'bench-token:' || g, $1::jsonb FROM generate_series($2::bigint, $3::bigint) AS g
                    """, [fcmPayload(bytes: payloadBytes), firstToken + done, firstToken + done + size - 1])
                done += size
                progress(done)
                continue
            }
            if broadcastEvery > 0 {
                try connection.query("""
                    INSERT INTO pgpush.notifications (device_token, channel_id, push_type, priority, payload)
                    SELECT CASE WHEN g % $4 <> 0 THEN lpad(to_hex(g), 64, '0') END,
                           CASE WHEN g % $4 = 0 THEN ($5::text[])[1 + (g / $4) % cardinality($5::text[])] END,
                           CASE WHEN g % $4 = 0 THEN 'liveactivity' ELSE 'alert' END,
                           CASE WHEN g % $4 = 0 THEN 5 END,
                           CASE WHEN g % $4 = 0 THEN $6::jsonb ELSE $1::jsonb END
                      FROM generate_series($2::bigint, $3::bigint) AS g
                    """, [payload(bytes: payloadBytes), firstToken + done, firstToken + done + size - 1, broadcastEvery,
                          channels, liveActivityPayload(bytes: payloadBytes)])
                done += size
                progress(done)
                continue
            }
            try connection.query("""
                INSERT INTO pgpush.notifications (device_token, payload)
                SELECT lpad(to_hex(g), 64, '0'), $1::jsonb FROM generate_series($2::bigint, $3::bigint) AS g
                """, [payload(bytes: payloadBytes), firstToken + done, firstToken + done + size - 1])
            done += size
            progress(done)
        }
        if analyze { try connection.execute(script: "ANALYZE pgpush.notifications") }
    }

    /// Whether any row is still `queued` or `sending`. Cheap at any table size (each probe
    /// is one step into a partial index), so polling it does not load the server the
    /// worker is measured on; a count over 200,000 rows every 100 ms did.
    package static func anyUnfinished(_ connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            SELECT EXISTS (SELECT 1 FROM pgpush.notifications WHERE status = 'queued')
                OR EXISTS (SELECT 1 FROM pgpush.notifications WHERE status = 'sending')
            """).bool(0, 0) ?? true
    }

    /// Rows still `queued` or `sending`: a scan, for progress lines every few seconds only.
    package static func unfinished(_ connection: PostgresConnection) throws -> Int {
        try connection.query("SELECT count(*) FROM pgpush.notifications WHERE status IN ('queued', 'sending')").int(0, 0) ?? 0
    }

    /// Rows by status.
    package static func statusCounts(_ connection: PostgresConnection) throws -> [String: Int] {
        let result = try connection.query("SELECT status, count(*) FROM pgpush.notifications GROUP BY 1")
        var counts: [String: Int] = [:]
        for row in 0..<result.rowCount { counts[result.string(row, 0) ?? "?"] = result.int(row, 1) }
        return counts
    }

    /// Finished rows per second between the 10th and the 90th percentile of `finished_at`:
    /// the drain rate without start-up and the last stragglers.
    package static func steadyRate(_ connection: PostgresConnection) throws -> Double? {
        let result = try connection.query("""
            SELECT count(*), extract(epoch FROM percentile_disc(0.9) WITHIN GROUP (ORDER BY finished_at)
                                     - percentile_disc(0.1) WITHIN GROUP (ORDER BY finished_at))
              FROM pgpush.notifications WHERE finished_at IS NOT NULL
            """)
        guard let count = result.int(0, 0), let seconds = result.double(0, 1), seconds > 0 else { return nil }
        return Double(count) * 0.8 / seconds
    }
}
