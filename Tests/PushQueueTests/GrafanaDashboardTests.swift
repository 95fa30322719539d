import Foundation
import PGPushTestSupport
import Postgres
import Testing

/// deploy/grafana/pgpush.json: every SQL query of the dashboard (each PostgreSQL panel
/// target's rawSql and each SQL template variable's query) runs against the migrated
/// schema as a login role that is a member of pgpush_monitor only, the role the README
/// tells operators to give Grafana. A view or column that does not exist, or one the
/// monitor may not read (a payload, a device token), fails here; the key panels return
/// what the rows inserted below make them return.
///
/// Grafana expands its macros before PostgreSQL sees the query; the test does the same,
/// with the SQL Grafana's PostgreSQL data source produces, over a fixed range
/// (two hours ago until a minute from now):
///   $__timeFilter(col)            (col BETWEEN 'FROM' AND 'TO'), ISO-8601 UTC literals
///   $__timeGroupAlias(col, '1m')  floor(extract(epoch FROM col) / 60) * 60 AS "time"
///   $__timeGroup(col, '1m')       the same without the alias
///   $__timeFrom(), $__timeTo()    'FROM', 'TO'
///   $app, ${app}                  the apps the variable's own query returned, quoted and
///                                 comma-separated (what "All" of a multi-value variable gives)
/// Anything else starting with `$` is left alone and fails the test: a new macro needs a
/// substitution here first.
@Suite(.serialized) struct GrafanaDashboardTests {
    static let dashboardPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy/grafana/pgpush.json").path
    static let postgresType = "grafana-postgresql-datasource"

    /// One SQL query of the dashboard: where it is (a panel title or `variable <name>`) and its text.
    struct Query {
        let place: String
        let sql: String
    }

    /// A query's rows, each a column name → text value (nil for NULL).
    typealias Rows = [[String: String?]]

    static func dashboard() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: dashboardPath))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Every panel, rows' nested panels included.
    static func panels(_ dashboard: [String: Any]) -> [[String: Any]] {
        func flatten(_ list: [[String: Any]]) -> [[String: Any]] {
            list.flatMap { [$0] + flatten($0["panels"] as? [[String: Any]] ?? []) }
        }
        return flatten(dashboard["panels"] as? [[String: Any]] ?? [])
    }

    static func isPostgres(_ datasource: Any?) -> Bool {
        (datasource as? [String: Any])?["type"] as? String == postgresType
    }

    /// The rawSql of every PostgreSQL target (a target without its own data source uses the panel's).
    static func panelQueries(_ dashboard: [String: Any]) -> [Query] {
        panels(dashboard).flatMap { panel -> [Query] in
            let title = panel["title"] as? String ?? "panel \(panel["id"] ?? "?")"
            return (panel["targets"] as? [[String: Any]] ?? []).compactMap { target in
                guard isPostgres(target["datasource"] ?? panel["datasource"]) else { return nil }
                return Query(place: title, sql: target["rawSql"] as? String ?? "")
            }
        }
    }

    /// The query of every template variable read from PostgreSQL.
    static func variableQueries(_ dashboard: [String: Any]) -> [Query] {
        let variables = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        return variables.compactMap { variable in
            guard isPostgres(variable["datasource"]) else { return nil }
            // Newer Grafana versions may store the query as an object holding rawSql.
            let sql = variable["query"] as? String ?? (variable["query"] as? [String: Any])?["rawSql"] as? String ?? ""
            return Query(place: "variable \(variable["name"] as? String ?? "?")", sql: sql)
        }
    }

    /// The macros replaced as the comment at the top says.
    static func substitute(_ sql: String, from: Date, to: Date, apps: [String]) throws -> String {
        let format = ISO8601DateFormatter()
        let fromText = "'\(format.string(from: from))'"
        let toText = "'\(format.string(from: to))'"
        var text = sql
        let filter = try Regex<(Substring, Substring)>(#"\$__timeFilter\(\s*([^)]+?)\s*\)"#)
        text = text.replacing(filter) { "(\($0.output.1) BETWEEN \(fromText) AND \(toText))" }
        let group = try Regex<(Substring, Substring?, Substring, Substring, Substring)>(
            #"\$__timeGroup(Alias)?\(\s*([^,()]+?)\s*,\s*'?([0-9]+)([smhd])'?\s*\)"#)
        var badInterval: String?
        text = text.replacing(group) { match in
            let unit: [Substring: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
            guard let count = Int(match.output.3), let seconds = unit[match.output.4].map({ $0 * count }), seconds > 0 else {
                badInterval = String(match.output.0)
                return String(match.output.0)
            }
            let expression = "floor(extract(epoch FROM \(match.output.2)) / \(seconds)) * \(seconds)"
            return match.output.1 == nil ? expression : "\(expression) AS \"time\""
        }
        if let badInterval { throw SubstitutionError(text: badInterval) }
        text = text.replacing("$__timeFrom()", with: fromText).replacing("$__timeTo()", with: toText)
        let quoted = apps.map { "'" + $0.replacing("'", with: "''") + "'" }.joined(separator: ",")
        text = text.replacing("${app}", with: quoted)
        text = text.replacing(try Regex(#"\$app\b"#), with: quoted)
        return text
    }

    struct SubstitutionError: Error, CustomStringConvertible {
        let text: String
        var description: String { "cannot substitute \(text)" }
    }

    static func rows(_ result: PostgresResult) -> Rows {
        let names = (0..<result.columnCount).map { result.columnName($0) ?? "#\($0)" }
        return (0..<result.rowCount).map { row in
            Dictionary(uniqueKeysWithValues: names.enumerated().map { ($0.element, result.string(row, $0.offset)) })
        }
    }

    /// A migrated database with roles.sql applied, a few rows of every kind the panels read
    /// (inserted by the superuser), and a connection as a fresh login role in pgpush_monitor.
    static func setUp() throws -> (monitor: PostgresConnection, owner: PostgresConnection) {
        let conninfo = try TestDatabase.migrated()
        let owner = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.applyRoles(owner)
        let token = String(repeating: "0a", count: 32)
        // shop: 2 due (the older 5 minutes old), 1 scheduled, 1 being sent, and finished rows;
        // news: 1 due and no live worker; archive: finished rows only (not in the app variable).
        try owner.execute(script: """
            INSERT INTO pgpush.notifications (app, device_token, payload, status, send_after, locked_by, locked_until, finished_at)
            VALUES ('shop', '\(token)', '{}', 'queued',    now() - interval '5 minutes', NULL, NULL, NULL),
                   ('shop', '\(token)', '{}', 'queued',    now() - interval '1 minute',  NULL, NULL, NULL),
                   ('shop', '\(token)', '{}', 'queued',    now() + interval '1 hour',    NULL, NULL, NULL),
                   ('shop', '\(token)', '{}', 'sending',   now() - interval '1 minute',  'w1', now() + interval '1 minute', NULL),
                   ('shop', '\(token)', '{}', 'delivered', now() - interval '20 minutes', NULL, NULL, now() - interval '10 minutes'),
                   ('shop', '\(token)', '{}', 'delivered', now() - interval '20 minutes', NULL, NULL, now() - interval '10 minutes'),
                   ('shop', '\(token)', '{}', 'delivered', now() - interval '20 minutes', NULL, NULL, now() - interval '4 minutes'),
                   ('shop', '\(token)', '{}', 'failed',    now() - interval '20 minutes', NULL, NULL, now() - interval '10 minutes'),
                   ('shop', '\(token)', '{}', 'expired',   now() - interval '20 minutes', NULL, NULL, now() - interval '4 minutes'),
                   ('shop', '\(token)', '{}', 'cancelled', now() - interval '4 hours',   NULL, NULL, now() - interval '3 hours'),
                   ('news', '\(token)', '{}', 'queued',    now() - interval '2 minutes', NULL, NULL, NULL),
                   ('archive', '\(token)', '{}', 'delivered', now() - interval '20 minutes', NULL, NULL, now() - interval '10 minutes');
            INSERT INTO pgpush.delivery_errors (notification_id, app, device_token, attempt, status, reason, created_at)
            VALUES (5, 'shop', '\(token)', 1, 400, 'BadDeviceToken', now() - interval '10 minutes'),
                   (8, 'shop', '\(token)', 1, 400, 'BadDeviceToken', now() - interval '9 minutes'),
                   (6, 'shop', '\(token)', 1, 503, 'ServiceUnavailable', now() - interval '9 minutes'),
                   (6, 'shop', '\(token)', 2, NULL, 'ConnectionReset', now() - interval '3 hours'),
                   (12, 'archive', '\(token)', 1, 410, 'Unregistered', now() - interval '10 minutes');
            INSERT INTO pgpush.app_health (app, topic, healthy, reason, worker_id)
            VALUES ('shop', NULL, true, NULL, 'w1'),
                   ('shop', 'com.example.shop.voip', false, 'TopicDisallowed', 'w1'),
                   ('news', NULL, false, 'InvalidProviderToken', 'w2');
            INSERT INTO pgpush.workers (id, host, pid, version, apps, connections, heartbeat_at, sent, delivered)
            VALUES ('w1', 'host-1', 11, 'test', '{shop}', 4, now(), 10, 8),
                   ('w2', 'host-2', 12, 'test', '{news}', 2, now() - interval '5 minutes', 3, 3);
            """)
        let role = "grafana_" + UUID().uuidString.prefix(8).lowercased()
        let monitor = try PostgresConnection(conninfo: TestDatabase.login(owner, conninfo: conninfo, role: role, group: "pgpush_monitor"))
        return (monitor, owner)
    }

    @Test func everySQLQueryRunsAsPgpushMonitorAndTheKeyPanelsShowTheRows() throws {
        let dashboard = try Self.dashboard()
        let (monitor, _) = try Self.setUp()

        // The role is what Grafana should get: not a superuser, and it really may not read payloads.
        #expect(try monitor.query("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").bool(0, 0) == false)
        #expect(throws: PostgresError.self) { try monitor.query("SELECT payload FROM pgpush.notifications") }

        let now = Date()
        let from = now.addingTimeInterval(-2 * 3600)
        let to = now.addingTimeInterval(60)

        // The app variable first: its values feed $app in the panels.
        let variables = Self.variableQueries(dashboard)
        #expect(variables.map(\.place) == ["variable app"])
        var apps: [String] = []
        for variable in variables {
            let sql = try Self.substitute(variable.sql, from: from, to: to, apps: [])
            #expect(!sql.contains("$"), "\(variable.place): a macro is left in \(sql)")
            let result = try monitor.query(sql)
            apps = (0..<result.rowCount).compactMap { result.string($0, 0) }
        }
        #expect(apps == ["news", "shop"])

        let queries = Self.panelQueries(dashboard)
        #expect(queries.count >= 7, "the dashboard lost its SQL panels: \(queries.map(\.place))")
        var results: [String: Rows] = [:]
        for query in queries {
            let sql = try Self.substitute(query.sql, from: from, to: to, apps: apps)
            #expect(!sql.contains("$"), "\(query.place): a macro is left in \(sql)")
            do {
                let rows = Self.rows(try monitor.query(sql))
                #expect(!rows.isEmpty, "\(query.place) returned no rows")
                results[query.place] = rows
            } catch {
                Issue.record("\(query.place) fails as a pgpush_monitor member: \(error)\n\(sql)")
            }
        }

        func column(_ place: String, _ name: String) -> [String?] { (results[place] ?? []).map { $0[name] ?? nil } }
        func sum(_ place: String, _ name: String) -> Double { column(place, name).compactMap { $0.flatMap(Double.init) }.reduce(0, +) }

        // Queue depth: the unfinished rows above, per app.
        let depth = results["Queue depth by app"] ?? []
        #expect(depth.map { $0["app"] ?? nil } == ["shop", "news"])
        #expect(depth.first?["due"] == "2" && depth.first?["scheduled"] == "1" && depth.first?["sending"] == "1")
        #expect(depth.last?["due"] == "1")

        // The oldest due row of shop waited about five minutes.
        let oldest = results["Oldest due row's age per app"] ?? []
        #expect(oldest.first?["metric"] == "shop")
        let shopAge = column("Oldest due row's age per app", "value").first.flatMap { $0.flatMap(Double.init) } ?? 0
        #expect(shopAge >= 299 && shopAge < 400, "\(shopAge)")

        // Only news has due rows and no live worker.
        #expect(column("Apps no worker serves", "app") == ["news"])
        #expect(column("Apps no worker serves", "due") == ["1"])

        // Finished per minute: the range holds 3 delivered, 1 failed, 1 expired of the shown apps
        // (the cancelled row finished before it, archive is not among the apps), in two minutes.
        let finished = "Finished per minute"
        #expect(sum(finished, "delivered") == 3 && sum(finished, "failed") == 1 && sum(finished, "expired") == 1)
        #expect(sum(finished, "cancelled") == 0)
        let minutes = column(finished, "time").compactMap { $0.flatMap(Double.init) }
        #expect(minutes.count == 2 && minutes.allSatisfy { $0.truncatingRemainder(dividingBy: 60) == 0 } && minutes == minutes.sorted())

        // Top failure reasons in the range: BadDeviceToken twice first, archive's left out.
        let reasons = results["Top failure reasons"] ?? []
        #expect(reasons.map { $0["reason"] ?? nil } == ["BadDeviceToken", "ServiceUnavailable"])
        #expect(reasons.first?["errors"] == "2" && reasons.first?["http_status"] == "400")

        // App health: the paused rows first, the paused topic named.
        let health = results["App health"] ?? []
        #expect(health.count == 3)
        #expect(health.prefix(2).allSatisfy { $0["healthy"] == "f" })
        #expect(health.contains { $0["topic"] == "com.example.shop.voip" && $0["reason"] == "TopicDisallowed" })
        #expect(health.contains { $0["app"] == "shop" && $0["topic"] == "" && $0["healthy"] == "t" })

        // Workers: one alive, one whose heartbeat is five minutes old.
        #expect(column("Live workers", "alive") == ["1"] && column("Live workers", "stale") == ["1"])
        #expect(column("Workers", "id") == ["w1", "w2"])
        #expect(column("Workers", "apps") == ["shop", "news"])
    }

    @Test func substitutionProducesGrafanasSQL() throws {
        let from = Date(timeIntervalSince1970: 1_700_000_000)
        let to = Date(timeIntervalSince1970: 1_700_003_600)
        let sql = try Self.substitute(
            "SELECT $__timeGroupAlias(finished_at, '5m'), $__timeGroup(t, 1h) FROM x WHERE $__timeFilter(finished_at) "
                + "AND app IN ($app) AND b IN (${app}) AND $__timeFrom() < $__timeTo()",
            from: from, to: to, apps: ["a", "o'b"])
        #expect(sql == "SELECT floor(extract(epoch FROM finished_at) / 300) * 300 AS \"time\", floor(extract(epoch FROM t) / 3600) * 3600 "
            + "FROM x WHERE (finished_at BETWEEN '2023-11-14T22:13:20Z' AND '2023-11-14T23:13:20Z') "
            + "AND app IN ('a','o''b') AND b IN ('a','o''b') AND '2023-11-14T22:13:20Z' < '2023-11-14T23:13:20Z'")
        #expect(throws: SubstitutionError.self) { try Self.substitute("$__timeGroup(t, '0m')", from: from, to: to, apps: []) }
    }
}
