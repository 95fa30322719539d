import Foundation
import PGPushTestSupport
import Postgres
import Testing

/// `pgpush web` and the demo's page as an operator starts them: the binary, a real database,
/// the page fetched over HTTP.
@Suite(.enabled(if: ChildProcess.pgpushBinary != nil, "the pgpush binary is built by `swift build` before the tests"))
struct WebCommandTests {
    let binary = ChildProcess.pgpushBinary ?? "pgpush"

    static func servedPort(_ output: String, after marker: String) -> Int? {
        output.range(of: marker).flatMap { range in Int(output[range.upperBound...].prefix { $0.isNumber }) }
    }

    /// Serves the pages as the role of DATABASE_URL; without PGPUSH_WEB_TOKEN a POST is
    /// refused; SIGTERM ends it with 0; a wrong address is a usage error naming the setting.
    @Test func webServesThePagesAndStopsOnSIGTERM() async throws {
        let conninfo = try TestDatabase.migrated()
        let database = try PostgresConnection(conninfo: conninfo)
        try TestDatabase.enqueueAlerts(database, count: 3)
        let web = try ChildProcess(binary, ["web", "--listen", "127.0.0.1:0"], environment: ["DATABASE_URL": conninfo])
        #expect(await web.waitForOutput(containing: "actions off", timeout: .seconds(60)), "\(web.output)")
        let port = try #require(Self.servedPort(web.output, after: "serving http://127.0.0.1:"), "\(web.output)")
        let overview = try PlainHTTP.request("GET", port: port, path: "/")
        #expect(overview.status == 200)
        #expect(overview.text.contains("data-field=\"due-normal\">3<"), "\(overview.text.prefix(2000))")
        let refused = try PlainHTTP.request("POST", port: port, path: "/cancel", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                            body: Array("token=x&id=1".utf8))
        #expect(refused.status == 403)
        web.signal(SIGTERM)
        #expect(await web.wait(timeout: .seconds(60)) == 0)

        let wrong = try ChildProcess(binary, ["web", "--listen", "localhost:notaport"], environment: ["DATABASE_URL": conninfo])
        #expect(await wrong.wait(timeout: .seconds(60)) == 2)
        #expect(wrong.output.contains("PGPUSH_WEB_LISTEN"), "\(wrong.output)")
    }

    /// The demo prints its page's address, and with --keep-page the page still answers after
    /// the report, showing the demo's rows, until Ctrl-C.
    @Test func theDemoKeepsItsPageUpWhenAsked() async throws {
        let conninfo = try TestDatabase.migrated()
        let demo = try ChildProcess(binary, ["demo", "--alerts", "5", "--keep-page"], environment: ["DATABASE_URL": conninfo])
        #expect(await demo.waitForOutput(containing: "Ctrl-C ends the demo", timeout: .seconds(600)), "\(demo.lastLines(30))")
        let port = try #require(Self.servedPort(demo.output, after: "status page: http://127.0.0.1:"), "\(demo.lastLines(30))")
        let overview = try PlainHTTP.request("GET", port: port, path: "/")
        #expect(overview.status == 200)
        #expect(overview.text.contains("data-app=\"demo\""))
        let failures = try PlainHTTP.request("GET", port: port, path: "/failures?app=demo")
        #expect(failures.text.contains("BadDeviceToken") || failures.text.contains("Unregistered"), "\(failures.text.prefix(3000))")
        demo.signal(SIGINT)
        #expect(await demo.wait(timeout: .seconds(60)) == 0, "\(demo.lastLines(30))")
    }
}
