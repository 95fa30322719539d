import LocalHTTP
@testable import PGPushWeb
import Testing

/// The page's rules that need no database: escaping, cutting, counting, the token.
@Suite struct PageRenderingTests {
    @Test func textIsEscapedAndControlsAreShown() {
        #expect(HTML(text: "<a href='x'>\"&\"</a>").markup == "&lt;a href=&#39;x&#39;&gt;&quot;&amp;&quot;&lt;/a&gt;")
        #expect(HTML(text: "a\u{0}b\u{1B}[31mc\u{7F}\u{202E}d\u{200B}").markup == "a\\u{0}b\\u{1B}[31mc\\u{7F}\\u{202E}d\\u{200B}")
        #expect(HTML(text: "línea ✓ 日本").markup == "línea ✓ 日本")
    }

    @Test func longTextIsCutWithItsLengthSaid() {
        #expect(HTML(text: String(repeating: "x", count: 10), limit: 4).markup == "xxxx<span class=\"cut\">… (10 characters)</span>")
        #expect(HTML(text: "xxxx", limit: 4).markup == "xxxx")
        // Read cut by SQL (left(reason, 4)) with its whole length from length(reason).
        #expect(HTML(text: "<<<<", limit: 4, length: 9).markup == "&lt;&lt;&lt;&lt;<span class=\"cut\">… (9 characters)</span>")
    }

    @Test func attributesAreEscaped() {
        let markup = HTML.element("a", ["href": "/failures?reason=\"><script>"], HTML(text: "x")).markup
        #expect(markup == "<a href=\"/failures?reason=&quot;&gt;&lt;script&gt;\">x</a>")
        #expect(queryEncoded("a b&c=d/é") == "a%20b%26c%3Dd%2F%C3%A9")
    }

    @Test func countsAndAges() {
        #expect(HTML(count: 1_234_567).markup == "1,234,567")
        #expect(HTML(count: 999).markup == "999")
        #expect(HTML(count: -1000).markup == "-1,000")
        #expect(PageRendering.age(59.9) == "59 s")
        #expect(PageRendering.age(600) == "10 min")
        #expect(PageRendering.age(7500) == "2 h 5 min")
        #expect(PageRendering.age(200_000) == "2 d 7 h")
    }

    @Test func theTokenComparisonNeedsEveryByte() {
        let token = Array("secret".utf8)
        #expect(StatusSite.sameBytes(token, token))
        for other in ["", "secre", "secretX", "Secret", "secreT"] { #expect(!StatusSite.sameBytes(Array(other.utf8), token), "\(other)") }
    }

    /// Requests the site refuses before it needs the database.
    @Test func actionsOffUnknownPagesAndWrongMethods() {
        let site = StatusSite(conninfo: "host=/nonexistent", token: nil, version: "test")
        let post = HTTPRequest(method: "POST", path: "/requeue", headers: [("host", "127.0.0.1:8470"), ("content-type", "application/x-www-form-urlencoded")],
                               body: Array("token=x&id=1".utf8))
        func get(_ path: String, method: String = "GET") -> HTTPRequest {
            HTTPRequest(method: method, path: path, headers: [("host", "localhost:8470")])
        }
        #expect(site.answer(post).status == 403)
        #expect(site.answer(get("/nothing")).status == 404)
        #expect(site.answer(get("/", method: "DELETE")).status == 405)
        #expect(site.answer(get("/notifications/abc")).status == 404)
        let withToken = StatusSite(conninfo: "host=/nonexistent", token: "right", version: "test")
        #expect(withToken.answer(post).status == 403)
        let css = site.answer(get("/style.css"))
        #expect(css.status == 200 && css.contentType.hasPrefix("text/css"))
        // The database down is a page that says so, not a crash.
        let down = site.answer(get("/"))
        #expect(down.status == 503)
        #expect(String(decoding: down.body, as: UTF8.self).contains("Database unavailable"))
    }

    /// Listening on loopback, the page answers only requests naming a loopback host: a site
    /// that points a name of its own at 127.0.0.1 (DNS rebinding) gets 421, not the page.
    @Test func onLoopbackOnlyLoopbackHostsAreAnswered() {
        let site = StatusSite(conninfo: "host=/nonexistent", token: nil, version: "test")
        for host in ["127.0.0.1:8470", "localhost:8470", "LOCALHOST", "[::1]:8470", "127.3.2.1"] {
            #expect(site.answer(HTTPRequest(method: "GET", path: "/style.css", headers: [("host", host)])).status == 200, "\(host)")
        }
        for host in [nil, "evil.example", "evil.example:8470", "127.0.0.1.evil.example", "localhost.evil.example", "[::2]:8470",
                     "128.0.0.1", "127.0.0.256"] as [String?] {
            let headers = host.map { [(name: "host", value: $0)] } ?? []
            #expect(site.answer(HTTPRequest(method: "GET", path: "/style.css", headers: headers)).status == 421, "\(host ?? "no Host")")
        }
        // Listening elsewhere (behind a proxy that authenticates), the Host is the proxy's business.
        let open = StatusSite(conninfo: "host=/nonexistent", token: nil, version: "test", loopbackHostsOnly: false)
        #expect(open.answer(HTTPRequest(method: "GET", path: "/style.css", headers: [("host", "status.example.com")])).status == 200)
    }

    /// The chart is drawn from numbers only; its label is escaped.
    @Test func theChartEscapesItsLabel() {
        var delivered = [Int](repeating: 0, count: 60), failed = [Int](repeating: 0, count: 60)
        delivered[0] = 10
        failed[59] = 5
        let svg = ThroughputChart.svg(delivered: delivered, failed: failed, label: "<x>").markup
        #expect(svg.contains("&lt;x&gt;: 10 delivered, 5 failed"))
        #expect(svg.components(separatedBy: "<rect class=\"ok\"").count == 2)
        #expect(svg.components(separatedBy: "<rect class=\"bad\"").count == 2)
        // The latest minute is the rightmost column, the oldest the leftmost.
        #expect(svg.contains("<rect class=\"ok\" x=\"177.0\""))
        #expect(svg.contains("<rect class=\"bad\" x=\"0.0\""))
    }
}
