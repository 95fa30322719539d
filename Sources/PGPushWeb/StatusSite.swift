import Foundation
import LocalHTTP
import Locking
import Postgres

/// `pgpush web`: which request gets which page, and the actions' rules. Reads through
/// `StatusPages`, draws through `PageRendering`, connects as the role `conninfo` names, so
/// the tenant rules of that role hold on every page and action.
package final class StatusSite: Sendable {
    package let conninfo: String
    private let token: [UInt8]?
    private let version: String
    private let idle = Locked<[HeldConnection]>([])
    /// What one browser may take of the server: forms are small (a page of selected ids),
    /// a page is read within seconds, and a handful of people look at once.
    package static let limits = HTTPServer.Limits(requestDeadline: .seconds(10), writeDeadline: .seconds(30),
                                                  maximumRequestSize: 16 * 1024, maximumBodySize: 64 * 1024, maximumConnections: 32)
    /// Connections kept open between requests; a burst past them opens more and closes them after.
    static let idleConnections = 4

    /// `token`: `PGPUSH_WEB_TOKEN`; nil or empty turns the actions off.
    /// Whether requests must name a loopback host (`Host: 127.0.0.1:…`, `localhost:…`,
    /// `[::1]:…`): true when the page listens on loopback. A web page the operator's browser
    /// opens elsewhere could otherwise point a name of its own at 127.0.0.1 (DNS rebinding)
    /// and read the status page as if it were its own site.
    private let loopbackHostsOnly: Bool

    /// `token`: `PGPUSH_WEB_TOKEN`; nil or empty turns the actions off.
    package init(conninfo: String, token: String?, version: String, loopbackHostsOnly: Bool = true) {
        self.conninfo = conninfo
        self.token = token.flatMap { $0.isEmpty ? nil : Array($0.utf8) }
        self.version = version
        self.loopbackHostsOnly = loopbackHostsOnly
    }

    /// `127.0.0.1:8470`, `localhost`, `[::1]:8470`, `127.5.0.1`: a name that cannot be
    /// anyone else's. Anything else, or no Host at all, is not.
    static func namesLoopback(_ host: String?) -> Bool {
        guard var name = host?.lowercased() else { return false }
        if name.hasPrefix("[") {
            guard let end = name.firstIndex(of: "]") else { return false }
            return name[name.index(after: name.startIndex)..<end] == "::1"
        }
        if let colon = name.lastIndex(of: ":") { name = String(name[..<colon]) }
        if name == "localhost" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    package var actionsEnabled: Bool { token != nil }

    /// Header fields on every answer: nothing loads from anywhere else, nothing runs, no
    /// page is framed, nothing is cached or sent on as a referrer.
    static let securityHeaders = [
        HTTPHeaderField("Content-Security-Policy",
                        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
        HTTPHeaderField("X-Content-Type-Options", "nosniff"),
        HTTPHeaderField("Referrer-Policy", "no-referrer"),
        HTTPHeaderField("Cache-Control", "no-store"),
        HTTPHeaderField("X-Frame-Options", "DENY"),
    ]

    package func answer(_ request: HTTPRequest) -> HTTPResponse {
        let context = PageRendering.Context(version: version, actionsEnabled: actionsEnabled, notice: notice(request))
        if loopbackHostsOnly && !Self.namesLoopback(request.header("host")) {
            return page(421, PageRendering.message(title: "Wrong host",
                                                   "This page answers to 127.0.0.1 and localhost only (it listens on loopback).",
                                                   context: context))
        }
        switch (request.method, request.path) {
        case ("GET", "/style.css"):
            return HTTPResponse(status: 200, contentType: "text/css; charset=utf-8", headers: Self.securityHeaders,
                                body: PageRendering.styleSheet)
        case ("GET", "/"):
            return withDatabase(context) { PageRendering.overview(try StatusPages.overview($0), context: context) }
        case ("GET", "/failures"):
            let filter = StatusPages.Filter(app: nonEmpty(request.queryValue("app")), service: nonEmpty(request.queryValue("service")),
                                            reason: nonEmpty(request.queryValue("reason")))
            return withDatabase(context) {
                PageRendering.failures(try StatusPages.failures($0, filter: filter), filter: filter, context: context)
            }
        case ("GET", let path) where path.hasPrefix("/notifications/"):
            guard let id = Int(path.dropFirst("/notifications/".count)), id > 0 else { return notFound(context) }
            return withDatabase(context) { connection in
                guard let detail = try StatusPages.notification(connection, id: id) else {
                    return (404, PageRendering.message(title: "Not found",
                                                       "No notification \(id), or not one this database role may see.", context: context))
                }
                return (200, PageRendering.notification(detail, context: context))
            }
        case ("POST", "/requeue"), ("POST", "/cancel"):
            return act(request, context: context)
        case (_, "/"), (_, "/failures"), (_, "/style.css"):
            return page(405, PageRendering.message(title: "Not allowed", "This page is only read (GET).", context: context))
        default:
            return notFound(context)
        }
    }

    // MARK: Actions

    /// Requeue or cancel: only with the token, only the ids the form names, only what the
    /// database role may change; then back to the page the form was on.
    private func act(_ request: HTTPRequest, context: PageRendering.Context) -> HTTPResponse {
        guard let token else {
            return page(403, PageRendering.message(title: "Refused", "Actions are off: pgpush web was started without PGPUSH_WEB_TOKEN.",
                                                   context: context))
        }
        let form = request.form
        guard let given = form.first(where: { $0.name == "token" })?.value, Self.sameBytes(Array(given.utf8), token) else {
            return page(403, PageRendering.message(title: "Refused", "The token is missing or wrong; nothing was changed.", context: context))
        }
        let ids = form.filter { $0.name == "id" }.compactMap { Int($0.value) }.filter { $0 > 0 }
        guard !ids.isEmpty else {
            return page(400, PageRendering.message(title: "Nothing selected", "Select at least one notification.", context: context))
        }
        let requeue = request.path == "/requeue"
        let result: Result<Int, any Error> = withConnection { connection in
            Result { requeue ? try StatusPages.requeue(connection, ids: ids) : try StatusPages.cancel(connection, ids: ids) }
        }
        switch result {
        case .success(let count):
            let done = requeue ? "requeued" : "cancelled"
            let back = Self.pageToReturnTo(form.first { $0.name == "back" }?.value, default: requeue ? "/failures" : "/notifications/\(ids[0])")
            let location = back + (back.contains("?") ? "&" : "?") + "\(done)=\(count)&of=\(ids.count)"
            return HTTPResponse(status: 303, headers: Self.securityHeaders + [HTTPHeaderField("Location", location)], body: "\(done) \(count)\n")
        case .failure(let error as PostgresError) where error.sqlState == "42501":
            return page(403, PageRendering.message(title: "Refused",
                                                   "This database role may not \(requeue ? "requeue" : "cancel") these notifications: \(error.message)",
                                                   context: context))
        case .failure(let error):
            return page(503, PageRendering.message(title: "Database error", String(describing: error), context: context))
        }
    }

    /// The page a form came from, when it is one of this site's own (never another host:
    /// `//evil.example` and `https://…` are not paths of ours).
    static func pageToReturnTo(_ back: String?, default fallback: String) -> String {
        guard let back, back.hasPrefix("/failures") || back.hasPrefix("/notifications/"),
              !back.unicodeScalars.contains(where: { $0.value < 0x21 || $0 == "\\" }) else { return fallback }
        return back
    }

    /// What the action before this page did, from the query the redirect carried.
    private func notice(_ request: HTTPRequest) -> String? {
        guard let of = request.queryValue("of").flatMap(Int.init) else { return nil }
        if let count = request.queryValue("requeued").flatMap(Int.init) {
            return "Requeued \(count) of \(of) selected notification\(of == 1 ? "" : "s")"
                + (count < of ? " (only failed or expired ones are put back)." : ".")
        }
        if let count = request.queryValue("cancelled").flatMap(Int.init) {
            return count == of ? "Cancelled." : "Not cancelled: only a queued notification not yet claimed can be."
        }
        return nil
    }

    /// Compares every byte whatever the first difference, so timing tells nothing of the token.
    static func sameBytes(_ given: [UInt8], _ expected: [UInt8]) -> Bool {
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        for index in 0..<expected.count { difference |= expected[index] ^ (index < given.count ? given[index] : 0) }
        return difference == 0
    }

    // MARK: Pages and the database

    private func page(_ status: Int, _ html: HTML) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/html; charset=utf-8", headers: Self.securityHeaders, body: html.markup)
    }

    private func notFound(_ context: PageRendering.Context) -> HTTPResponse {
        page(404, PageRendering.message(title: "Not found", "No such page: try the overview or the failures.", context: context))
    }

    private func nonEmpty(_ value: String?) -> String? { value.flatMap { $0.isEmpty ? nil : $0 } }

    private func withDatabase(_ context: PageRendering.Context, _ render: (PostgresConnection) throws -> HTML) -> HTTPResponse {
        withDatabase(context) { (200, try render($0)) }
    }

    private func withDatabase(_ context: PageRendering.Context, _ render: (PostgresConnection) throws -> (Int, HTML)) -> HTTPResponse {
        let result: Result<(Int, HTML), any Error> = withConnection { connection in Result { try render(connection) } }
        switch result {
        case .success(let (status, html)):
            return page(status, html)
        case .failure(let error as PostgresError) where error.sqlState == "42501":
            return page(403, PageRendering.message(title: "Refused", "This database role may not read this page: \(error.message)", context: context))
        case .failure(let error as PostgresError) where error.sqlState == "42P01" || error.sqlState == "3F000":
            return page(503, PageRendering.message(title: "No pgpush schema", "Run pgpush migrate: \(error.message)", context: context))
        case .failure(let error):
            return page(503, PageRendering.message(title: "Database unavailable", String(describing: error), context: context))
        }
    }

    /// One connection for one request: an idle one, or a new one; kept afterwards while
    /// fewer than `idleConnections` wait, and only if it still works. A kept connection the
    /// server has since closed (a restart, a failover) costs one more try on a new one, not
    /// an error page.
    private func withConnection<T>(_ body: (PostgresConnection) -> Result<T, any Error>) -> Result<T, any Error> {
        if let reused = idle.withLock({ $0.popLast() }) {
            let result = body(reused.connection)
            if reused.connection.isConnected {
                keep(reused)
                return result
            }
            // Tried again only when the connection itself failed. An action whose statement
            // ran before the connection broke runs again: requeue and cancel change a row
            // once however often they are asked.
            if case .success = result { return result }
        }
        let held: HeldConnection
        do {
            held = HeldConnection(try PostgresConnection(conninfo: conninfo))
        } catch {
            return .failure(error)
        }
        let result = body(held.connection)
        if held.connection.isConnected { keep(held) }
        return result
    }

    private func keep(_ held: HeldConnection) {
        idle.withLock { if $0.count < Self.idleConnections { $0.append(held) } }
    }
}

/// A connection in the idle list or used by one request, never both: the list hands it to
/// one request at a time under its lock, which is what makes the move across threads safe.
final class HeldConnection: @unchecked Sendable {
    let connection: PostgresConnection
    init(_ connection: PostgresConnection) { self.connection = connection }
}
