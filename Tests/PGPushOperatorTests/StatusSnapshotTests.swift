import Foundation
import PGPushOperator
import PGPushTestSupport
import Postgres
import Testing

/// `pgpush status --json` against a database whose rows are known.
@Suite struct StatusSnapshotTests {
    static let alert = "'{\"aps\":{\"alert\":\"x\"}}'"

    /// Two apps: shop has due, scheduled, in-flight and finished rows, errors, an invalid
    /// token, an alive worker and a healthy state; news has a dead worker and a bad key.
    static func seeded() throws -> PostgresConnection {
        let database = try PostgresConnection(conninfo: try TestDatabase.migrated())
        try database.execute(script: """
            INSERT INTO pgpush.notifications (app, device_token, payload, send_after) VALUES
                ('shop', 'aa01', \(alert), now() - interval '90 seconds'),
                ('shop', 'aa02', \(alert), now()),
                ('shop', 'aa03', \(alert), now() + interval '1 hour'),
                ('news', 'bb01', \(alert), now() - interval '10 seconds');
            INSERT INTO pgpush.notifications (app, device_token, payload, status, locked_by, locked_until)
                VALUES ('shop', 'aa04', \(alert), 'sending', 'w-shop', now() + interval '1 minute');
            INSERT INTO pgpush.notifications (app, device_token, payload, status, finished_at) VALUES
                ('shop', 'aa05', \(alert), 'delivered', now()), ('shop', 'aa06', \(alert), 'delivered', now()),
                ('shop', 'aa07', \(alert), 'failed', now()), ('shop', 'aa08', \(alert), 'delivered', now() - interval '2 hours');
            INSERT INTO pgpush.delivery_errors (notification_id, app, device_token, attempt, status, reason) VALUES
                (7, 'shop', 'aa07', 1, 410, 'Unregistered'),
                (1, 'shop', 'aa01', 1, 503, 'ServiceUnavailable'), (1, 'shop', 'aa01', 2, 503, 'ServiceUnavailable'),
                (9, 'news', 'bb01', 1, NULL, 'BadBackgroundPayload');
            INSERT INTO pgpush.invalid_tokens (app, device_token, reason) VALUES
                ('shop', 'aa07', 'Unregistered'), ('shop', 'aa09', 'BadDeviceToken'), ('news', 'bb02', 'Unregistered');
            INSERT INTO pgpush.workers (id, host, pid, version, apps, connections, heartbeat_at, sent, delivered, failed, retried)
            VALUES ('w-shop', 'h1', 11, '0.1.0', '{shop}', 4, now(), 10, 7, 1, 2),
                   ('w-news', 'h2', 12, '0.1.0', '{news}', 2, now() - interval '5 minutes', 0, 0, 0, 0);
            INSERT INTO pgpush.app_health (app, healthy, reason, worker_id) VALUES
                ('shop', true, NULL, 'w-shop'), ('news', false, 'InvalidProviderToken', 'w-news');
            """)
        return database
    }

    @Test func jsonHoldsEverySectionForAllApps() throws {
        let database = try Self.seeded()
        let data = try StatusSnapshot.load(from: database).jsonData()
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(object.keys) == ["taken_at", "app", "queue", "throughput", "errors", "invalid_tokens", "workers", "apps",
                                     "unserved_apps"])
        #expect(object["app"] is NSNull)

        let queue = try #require(object["queue"] as? [[String: Any]])
        #expect(queue.map { $0["app"] as? String } == ["news", "shop"])
        let shop = queue[1]
        #expect(shop["due"] as? Int == 2 && shop["scheduled"] as? Int == 1 && shop["sending"] as? Int == 1)
        let oldest = try #require(shop["oldest_due_seconds"] as? Double)
        #expect(oldest >= 90 && oldest < 150)

        let minutes = try #require(object["throughput"] as? [[String: Any]])
        #expect(minutes.count == 1)   // the row finished 2 hours ago is outside the 10 minutes
        #expect(minutes.first?["delivered"] as? Int == 2 && minutes.first?["failed"] as? Int == 1)

        let errors = try #require(object["errors"] as? [[String: Any]])
        #expect(errors.first?["reason"] as? String == "ServiceUnavailable" && errors.first?["errors"] as? Int == 2)
        #expect(errors.contains { $0["reason"] as? String == "BadBackgroundPayload" && $0["status"] is NSNull })

        let invalid = try #require(object["invalid_tokens"] as? [[String: Any]])
        #expect(invalid.map { "\($0["app"] ?? "") \($0["tokens"] ?? "")" } == ["news 1", "shop 2"])

        let workers = try #require(object["workers"] as? [[String: Any]])
        #expect(workers.map { $0["id"] as? String } == ["w-news", "w-shop"])
        #expect(workers[0]["alive"] as? Bool == false && workers[1]["alive"] as? Bool == true)
        #expect(workers[1]["delivered"] as? Int == 7 && workers[1]["apps"] as? [String] == ["shop"])
        #expect((workers[0]["seconds_since_heartbeat"] as? Double ?? 0) >= 299)

        let apps = try #require(object["apps"] as? [[String: Any]])
        #expect(apps.first?["app"] as? String == "news" && apps.first?["healthy"] as? Bool == false)
        #expect(apps.first?["reason"] as? String == "InvalidProviderToken" && apps.first?["worker_id"] as? String == "w-news")
        #expect(apps.last?["reason"] is NSNull)

        // The JSON reads back into the same snapshot.
        let decoded = try StatusSnapshot.decode(data)
        let loaded = try StatusSnapshot.load(from: database).withTakenAt(of: decoded)
        #expect(decoded == loaded, "decoded \(decoded)\nloaded \(loaded)")
    }

    @Test func oneAppLimitsEverySection() throws {
        let database = try Self.seeded()
        let snapshot = try StatusSnapshot.load(from: database, app: "news")
        #expect(snapshot.app == "news")
        #expect(snapshot.queue.map(\.app) == ["news"] && snapshot.queue.first?.due == 1)
        #expect(snapshot.throughput.isEmpty)
        #expect(snapshot.errors.map(\.reason) == ["BadBackgroundPayload"])
        #expect(snapshot.invalidTokens.map(\.tokens) == [1])
        #expect(snapshot.workers.map(\.id) == ["w-news"])
        #expect(snapshot.apps.map(\.healthy) == [false])

        let text = snapshot.rendered()
        #expect(text.contains("  1 due (oldest 1"))   // 10 s and counting
        #expect(text.contains("s), 0 scheduled, 0 sending · workers: 0 alive, 1 silent · unhealthy: news (InvalidProviderToken)"))
        #expect(text.contains("Workers (pgpush.worker_health)"))
        #expect(text.contains("w-news") && text.contains("NO"))
        #expect(text.contains("InvalidProviderToken"))
    }

    @Test func emptyDatabaseGivesEmptySections() throws {
        let database = try PostgresConnection(conninfo: try TestDatabase.migrated())
        let snapshot = try StatusSnapshot.load(from: database)
        #expect(snapshot.queue.isEmpty && snapshot.workers.isEmpty && snapshot.apps.isEmpty && snapshot.oldestDueSeconds == 0)
        #expect(snapshot.rendered().contains("(none)"))
    }
}

extension StatusSnapshot {
    /// Two loads differ in their time and in ages that grow; compare the rest.
    func withTakenAt(of other: StatusSnapshot) -> StatusSnapshot {
        var copy = self
        copy.takenAt = other.takenAt
        for index in copy.queue.indices where index < other.queue.count {
            copy.queue[index].oldestDueSeconds = other.queue[index].oldestDueSeconds
        }
        for index in copy.workers.indices where index < other.workers.count {
            copy.workers[index].secondsSinceHeartbeat = other.workers[index].secondsSinceHeartbeat
        }
        // Ages move on between the two reads (38 s apart once, on a loaded machine).
        for index in copy.unservedApps.indices where index < other.unservedApps.count {
            copy.unservedApps[index].oldestDueSeconds = other.unservedApps[index].oldestDueSeconds
        }
        return copy
    }
}

/// Text a row put in the database reaches the operator's terminal escaped.
@Suite struct StatusTerminalTextTests {
    @Test func controlCharactersFromTheDatabaseAreShownAsEscapes() throws {
        let database = try PostgresConnection(conninfo: try TestDatabase.migrated())
        // Tables without the notifications' input rules still hold what a writer put there.
        try database.query("""
            INSERT INTO pgpush.app_health (app, healthy, reason) VALUES ($1, false, $2)
            """, ["evil\u{1B}[2J", "\u{1B}[31mred\u{07}\nline"])
        try database.query("""
            INSERT INTO pgpush.delivery_errors (notification_id, app, device_token, attempt, status, reason)
            VALUES (1, 'shop', 'aa01', 1, 400, $1)
            """, ["Bad\u{9B}31m"])
        let text = try StatusSnapshot.load(from: database, app: nil).rendered()
        #expect(!text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B })
        #expect(text.contains("evil\\e[2J"))
        #expect(text.contains("\\e[31mred\\u{7}\\nline"))
        #expect(text.contains("Bad\\u{9b}31m"))
    }
}

/// Rows of an app no live worker serves wait for ever: the view, status and the worker's
/// metrics say so.
@Suite struct UnservedAppsTests {
    @Test func appsNoLiveWorkerServesAreListed() throws {
        let database = try PostgresConnection(conninfo: try TestDatabase.migrated())
        try database.execute(script: """
            INSERT INTO pgpush.notifications (app, device_token, payload) VALUES
                ('shop', 'aa01', '{}'), ('ghost', 'bb01', '{}'), ('ghost', 'bb02', '{}'), ('gone', 'cc01', '{}');
            INSERT INTO pgpush.workers (id, host, pid, version, apps) VALUES ('w1', 'h', 1, 'v', '{shop}');
            INSERT INTO pgpush.workers (id, host, pid, version, apps, heartbeat_at)
                VALUES ('w2', 'h', 2, 'v', '{gone}', now() - interval '5 minutes');
            """)
        let view = try database.query("SELECT app, due FROM pgpush.unserved_apps ORDER BY app")
        #expect((0..<view.rowCount).map { "\(view.string($0, 0) ?? "")=\(view.int($0, 1) ?? 0)" } == ["ghost=2", "gone=1"])
        let snapshot = try StatusSnapshot.load(from: database)
        #expect(snapshot.unservedApps.map(\.app) == ["ghost", "gone"])
        let text = snapshot.rendered()
        #expect(text.contains("not served: ghost (2 due), gone (1 due)"))
        #expect(text.contains("pgpush.unserved_apps"))
    }
}
