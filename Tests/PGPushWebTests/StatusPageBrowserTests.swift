import Foundation
import PGPushTestSupport
import PGPushWeb
import Postgres
import Testing

/// `pgpush web` as a person sees it: Debian's Chromium, headless, driven through
/// chromedriver, against the real server, a real database and real login roles.
@Suite(.serialized) struct StatusPageBrowserTests {
    /// Every figure of the overview equals what SQL counts in the table; the chart has a
    /// column for each minute with deliveries; health and live workers are listed.
    @Test func theOverviewShowsWhatSQLSays() async throws {
        let fixture = try StatusPageFixture()
        try fixture.fillWithEveryKindOfRow()
        let url = try fixture.serve()
        let browser = try await HeadlessChromium.start()
        defer { browser.stop() }
        try fixture.liveWorkerBeats()
        try browser.open(url + "/")
        #expect(try browser.title == "Overview · pgpush")
        let expected = try fixture.expectedFigures()
        #expect(expected.count == 4)
        #expect(try figuresOnThePage(browser) == expected)
        // The due normal rows have waited ten minutes: the oldest due row's age says so (a
        // minute more when the machine took that long from the fixture to the page).
        let age = try browser.text("tr[data-app='shop'][data-service='apns'] td[data-field='oldest-due']")
        #expect(age == "10 min" || age == "11 min", "\(age)")
        // shop/apns delivered in minutes 3 and 17 before now: two green columns.
        let chart = "tr[data-app='shop'][data-service='apns'] svg.chart"
        #expect(try browser.elements("\(chart) rect.ok").count == 2)
        #expect(try browser.elements("\(chart) rect.bad").count == 2)
        // Health: the flagged app and its reason; workers: only the live one.
        #expect(try browser.text("tr.unhealthy").contains("InvalidProviderToken"))
        let workers = try browser.pageSource
        #expect(workers.contains("worker-live") && !workers.contains("worker-gone"))
        // No payload and no device token anywhere on the page.
        #expect(!workers.contains("PAYLOAD-MARKER") && !workers.contains(StatusPageFixture.apnsToken(1).prefix(20)))
        // The page reloads itself, with scripts or without.
        #expect(try browser.attribute(try browser.element("meta[http-equiv='refresh']"), "content") == "10")
    }

    /// Selecting a failure, typing the token and pressing Requeue puts the row back to
    /// `queued` with its attempts reset; the page says what it did.
    @Test func aFailureRequeuedThroughThePageIsQueuedAgain() async throws {
        let fixture = try StatusPageFixture()
        let failed = try fixture.enqueue(3, app: "shop")
        try fixture.finish(failed, as: "failed", minutesAgo: 2, reason: "BadDeviceToken", httpStatus: 400)
        let url = try fixture.serve(token: "s3cret-token")
        let browser = try await HeadlessChromium.start()
        defer { browser.stop() }
        try browser.open(url + "/failures?app=shop")
        #expect(try browser.elements("table.failures tbody tr").count == 3)
        try browser.click(try browser.element("input[type=checkbox][value='\(failed[1])']"))
        try browser.type("s3cret-token", into: try browser.element("input[name=token]"))
        try browser.click(try browser.element("button[value=requeue]"))
        // Back on the list it was sent from, with what it did.
        #expect(try await browser.waitForURL { $0.hasSuffix("/failures?app=shop&requeued=1&of=1") })
        #expect(try browser.text(".notice") == "Requeued 1 of 1 selected notification.")
        let rows = try fixture.admin.query("SELECT id, status, attempts FROM pgpush.notifications WHERE id = ANY($1) ORDER BY id", [failed])
        let states = (0..<rows.rowCount).map { (rows.int($0, 0) ?? 0, rows.string($0, 1) ?? "", rows.int($0, 2) ?? -1) }
        #expect(states.map(\.1) == failed.sorted().map { $0 == failed[1] ? "queued" : "failed" })
        #expect(states.first { $0.0 == failed[1] }?.2 == 0)
        // What is left on the failures page is the other two.
        try browser.open(url + "/failures?app=shop")
        #expect(try browser.elements("table.failures tbody tr").count == 2)
    }

    /// Without the token nothing changes: a form sent with none or a wrong one is refused
    /// with 403, and a page started without PGPUSH_WEB_TOKEN shows no forms and refuses
    /// every POST.
    @Test func withoutTheTokenAnActionIsRefused() async throws {
        let fixture = try StatusPageFixture()
        let failed = try fixture.enqueue(1, app: "shop")
        try fixture.finish(failed, as: "failed", minutesAgo: 2, reason: "BadDeviceToken")
        let queued = try fixture.enqueue(1, app: "shop")
        let url = try fixture.serve(token: "right-token")
        let browser = try await HeadlessChromium.start()
        defer { browser.stop() }

        for typed in ["", "wrong-token", "right-tokenX", "right-toke"] {
            try browser.open(url + "/failures")
            try browser.click(try browser.element("input[type=checkbox][value='\(failed[0])']"))
            if !typed.isEmpty { try browser.type(typed, into: try browser.element("input[name=token]")) }
            try browser.click(try browser.element("button[value=requeue]"))
            #expect(try await browser.waitForTitle { $0 == "Refused · pgpush" }, "typed \(typed.debugDescription)")
        }
        try browser.open(url + "/notifications/\(queued[0])")
        try browser.type("wrong-token", into: try browser.element("form[action='/cancel'] input[name=token]"))
        try browser.click(try browser.element("form[action='/cancel'] button"))
        #expect(try await browser.waitForTitle { $0 == "Refused · pgpush" })
        let port = Int(url.split(separator: ":").last ?? "") ?? 0
        let forged = try PlainHTTP.request("POST", port: port, path: "/cancel",
                                           headers: ["Content-Type": "application/x-www-form-urlencoded"], body: Array("id=\(queued[0])".utf8))
        #expect(forged.status == 403)
        #expect(try statuses(fixture, failed + queued) == ["failed", "queued"])

        // Started without a token: no checkbox, no token field, and a POST with any token is refused.
        let readOnly = try fixture.serve()
        try browser.open(readOnly + "/failures")
        #expect(try browser.elements("table.failures tbody tr").count == 1)
        #expect(try browser.elements("input[type=checkbox], input[name=token]").isEmpty)
        try browser.open(readOnly + "/notifications/\(queued[0])")
        #expect(try browser.elements("form").isEmpty)
        let readOnlyPort = Int(readOnly.split(separator: ":").last ?? "") ?? 0
        for (path, id) in [("/requeue", failed[0]), ("/cancel", queued[0])] {
            let answer = try PlainHTTP.request("POST", port: readOnlyPort, path: path, headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                               body: Array("token=right-token&id=\(id)".utf8))
            #expect(answer.status == 403)
            #expect(answer.text.contains("Actions are off"))
        }
        #expect(try statuses(fixture, failed + queued) == ["failed", "queued"])
        // A GET never changes anything.
        #expect(try PlainHTTP.request("GET", port: port, path: "/requeue?token=right-token&id=\(failed[0])").status == 404)
        #expect(try statuses(fixture, failed + queued) == ["failed", "queued"])
    }

    /// A reason holding markup, control characters and bidi overrides is shown as the text
    /// it is; a 5 MB reason is cut, with its length said, and the page stays small.
    @Test func aReasonWithMarkupShowsAsText() async throws {
        let fixture = try StatusPageFixture()
        let hostile = try fixture.enqueue(1, app: "shop")
        try fixture.finish(hostile, as: "failed", minutesAgo: 1, reason: StatusPageFixture.markupReason, httpStatus: 400)
        let huge = try fixture.enqueue(1, app: "shop")
        try fixture.finish(huge, as: "failed", minutesAgo: 1, reason: String(repeating: "<i>x</i>", count: 5 * 1024 * 1024 / 8), httpStatus: 400)
        try fixture.admin.query("""
            INSERT INTO pgpush.delivery_errors (notification_id, app, attempt, status, reason, detail)
            VALUES ($1, 'shop', 1, 400, $2, $2)
            """, [hostile[0], StatusPageFixture.markupReason])
        let url = try fixture.serve(token: "t")
        let browser = try await HeadlessChromium.start()
        defer { browser.stop() }
        for page in ["/failures", "/notifications/\(hostile[0])"] {
            try browser.open(url + page)
            #expect(try browser.title != "owned", "on \(page)")
            #expect(try browser.elements("#injected, td.reason b, main script").isEmpty, "on \(page)")
            let shown = try browser.elements("td.reason").map { try browser.text($0) }
            #expect(shown.contains { $0.hasPrefix("<script>document.title='owned'</script><b id=\"injected\">bold</b>\\u{7}\\u{202E}end") },
                    "on \(page): \(shown.map { $0.prefix(120) })")
        }
        let port = Int(url.split(separator: ":").last ?? "") ?? 0
        let hugePage = try PlainHTTP.request("GET", port: port, path: "/notifications/\(huge[0])")
        #expect(hugePage.status == 200)
        #expect(hugePage.body.count < 200_000)
        #expect(hugePage.text.contains("… (5242880 characters)"))
        let list = try PlainHTTP.request("GET", port: port, path: "/failures")
        #expect(list.body.count < 100_000)
        // Every answer forbids scripts and framing whatever the page holds.
        #expect(list.headers["content-security-policy"]?.hasPrefix("default-src 'none'") == true)
        #expect(list.headers["x-content-type-options"] == "nosniff")
    }

    /// The tenant rules hold through the role the page connects as: a member of pgpush_app
    /// granted `shop` sees and acts on shop's rows only; a monitor sees every app but no payload.
    @Test func aMemberOfPgpushAppGrantedOneAppSeesOnlyThatApp() async throws {
        let fixture = try StatusPageFixture()
        try fixture.fillWithEveryKindOfRow()
        try TestDatabase.applyRoles(fixture.admin)
        let suffix = String(UUID().uuidString.prefix(8)).lowercased()
        let shopRole = try TestDatabase.login(fixture.admin, conninfo: fixture.conninfo, role: "web_shop_\(suffix)", group: "pgpush_app",
                                              apps: ["shop"])
        let monitorRole = try TestDatabase.login(fixture.admin, conninfo: fixture.conninfo, role: "web_monitor_\(suffix)",
                                                 group: "pgpush_monitor")
        let newsFailure = try fixture.admin.query("SELECT min(id) FROM pgpush.notifications WHERE app = 'news' AND status = 'failed'").int(0, 0) ?? 0
        let shopURL = try fixture.serve(conninfo: shopRole, token: "t")
        let browser = try await HeadlessChromium.start()
        defer { browser.stop() }

        try browser.open(shopURL + "/")
        let expected = try fixture.expectedFigures().filter { $0.key.hasPrefix("shop/") }
        #expect(try figuresOnThePage(browser) == expected)
        #expect(try browser.pageSource.contains("may not read pgpush.app_health"))
        try browser.open(shopURL + "/failures")
        let apps = try browser.elements("table.failures tbody tr td:nth-child(3)").map { try browser.text($0) }
        #expect(!apps.isEmpty && apps.allSatisfy { $0 == "shop" }, "\(apps)")
        try browser.open(shopURL + "/failures?app=news")
        #expect(try browser.elements("table.failures tbody tr").isEmpty)
        try browser.open(shopURL + "/notifications/\(newsFailure)")
        #expect(try browser.title == "Not found · pgpush")
        // A forged requeue of news's row, with the right token, changes nothing.
        let port = Int(shopURL.split(separator: ":").last ?? "") ?? 0
        _ = try PlainHTTP.request("POST", port: port, path: "/requeue", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                  body: Array("token=t&id=\(newsFailure)".utf8))
        #expect(try statuses(fixture, [newsFailure]) == ["failed"])

        let monitorURL = try fixture.serve(conninfo: monitorRole)
        try browser.open(monitorURL + "/")
        #expect(try figuresOnThePage(browser) == fixture.expectedFigures())
        try browser.open(monitorURL + "/notifications/\(newsFailure)")
        #expect(try browser.text("tr[data-field='app'] td") == "news")
        #expect(!(try browser.pageSource.contains("PAYLOAD-MARKER")))
    }

    /// The README and docs/ show the three pages: written from a browser when
    /// PGPUSH_WRITE_SCREENSHOTS=1, checked to be there otherwise.
    @Test func screenshotsOfTheThreePages() async throws {
        let docs = URL(fileURLWithPath: TestDatabase.sqlDirectory).deletingLastPathComponent().appendingPathComponent("docs")
        let names = ["web-overview.png", "web-failures.png", "web-notification.png"]
        guard ProcessInfo.processInfo.environment["PGPUSH_WRITE_SCREENSHOTS"] == "1" else {
            for name in names {
                let data = try Data(contentsOf: docs.appendingPathComponent(name))
                #expect(data.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(name) is a PNG")
            }
            return
        }
        let fixture = try StatusPageFixture()
        try fixture.fillWithEveryKindOfRow()
        for minute in 1...58 {
            try fixture.finish(try fixture.enqueue(20 + (minute * 7) % 13, app: "shop"), as: "delivered", minutesAgo: minute)
            if minute % 9 == 0 { try fixture.finish(try fixture.enqueue(3, app: "shop"), as: "failed", minutesAgo: minute, reason: "Unregistered", httpStatus: 410) }
        }
        let failure = try fixture.admin.query("SELECT min(id) FROM pgpush.notifications WHERE app = 'shop' AND status = 'failed'").int(0, 0) ?? 0
        try fixture.admin.query("""
            INSERT INTO pgpush.delivery_errors (notification_id, app, attempt, status, reason, worker_id, created_at)
            VALUES ($1, 'shop', 1, 503, 'ServiceUnavailable', 'worker-live', now() - interval '6 minutes'),
                   ($1, 'shop', 2, 400, 'BadDeviceToken', 'worker-live', now() - interval '5 minutes')
            """, [failure])
        let url = try fixture.serve(token: "t")
        let browser = try await HeadlessChromium.start(width: 1280, height: 1060)
        defer { browser.stop() }
        for (name, path) in zip(names, ["/", "/failures", "/notifications/\(failure)"]) {
            try browser.open(url + path)
            try browser.screenshot().write(to: docs.appendingPathComponent(name))
        }
    }

    private func statuses(_ fixture: StatusPageFixture, _ ids: [Int]) throws -> [String] {
        let rows = try fixture.admin.query("SELECT status FROM pgpush.notifications WHERE id = ANY($1) ORDER BY array_position($1, id)", [ids])
        return (0..<rows.rowCount).map { rows.string($0, 0) ?? "" }
    }
}
