import Foundation
import PGPushTestSupport
import Postgres
import Testing

/// The page and the database between its requests.
@Suite struct StatusSiteDatabaseTests {
    /// The connections the page keeps are closed by the server (a restart, a failover, an
    /// idle timeout): the next request is answered on a new one, not with an error page.
    @Test func aKeptConnectionTheServerClosedIsReplaced() async throws {
        let fixture = try StatusPageFixture()
        try fixture.enqueue(2, app: "shop")
        let url = try fixture.serve()
        let port = try #require(Int(url.split(separator: ":").last ?? ""))
        #expect(try PlainHTTP.request("GET", port: port, path: "/").status == 200)
        let ended = try fixture.admin.query("""
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
            """).int(0, 0) ?? 0
        #expect(ended >= 1)
        let again = try PlainHTTP.request("GET", port: port, path: "/")
        #expect(again.status == 200, "\(again.text.prefix(800))")
        #expect(again.text.contains("data-field=\"due-normal\">2<"))
    }
}
