import Foundation
import LocalHTTP
import PGPushWeb
import Postgres
import PushWorker

enum WebCommand {
    static let defaultListen = "127.0.0.1:8470"

    static let help = """
        pgpush web — a status page: the queue, failures, one row; requeue and cancel

        Serves HTML (no JavaScript, nothing fetched from elsewhere) over HTTP:
          /                     per app and service: rows queued now by lane, scheduled,
                                sending, the oldest due row's age, finished in the last hour
                                by status with a per-minute chart, app health, live workers;
                                reloads itself every 10 s
          /failures             failed and expired rows of the last 7 days, newest first;
                                ?app=, ?service=, ?reason= filter them
          /notifications/ID     one row's state and its delivery errors, never its payload,
                                device token or subscription

        The page shows and changes what its database role may: a member of pgpush_monitor
        sees every app; a member of pgpush_app only the apps granted to it.

        Actions (requeue selected failures through pgpush.requeue, cancel a queued row
        through pgpush.cancel) are off unless PGPUSH_WEB_TOKEN is set; then they are forms
        that ask for the token, and a request without it is refused with 403.

        Flags:
          --listen HOST:PORT    where to serve [PGPUSH_WEB_LISTEN, default \(defaultListen)];
                                keep it on loopback, or behind a proxy that authenticates
          --database-url URL    libpq connection string or URI [DATABASE_URL, then PG* variables]

        Environment:
          PGPUSH_WEB_TOKEN      the secret the action forms must carry; unset: actions off

        Examples:
          DATABASE_URL=postgres://pgpush_status@db/app pgpush web
          PGPUSH_WEB_TOKEN=$(cat /etc/pgpush/web-token) pgpush web --listen 127.0.0.1:8080
        """

    static let flags: Set<String> = ["help", "listen", "database-url"]

    static func run(_ arguments: Arguments) throws -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        let listen = arguments.value("listen") ?? environment["PGPUSH_WEB_LISTEN"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultListen
        let host: String
        do {
            host = try HTTPServer.parse(listen, setting: "PGPUSH_WEB_LISTEN").host
        } catch {
            throw UsageError(error.description)
        }
        let conninfo = try arguments.databaseURL()
        // Connecting once before serving says at start-up, not at the first page, that the
        // database or the role is wrong.
        let role = try PostgresConnection(conninfo: conninfo).query("SELECT current_user::text").string(0, 0) ?? "?"
        let loopback = host.hasPrefix("127.")
        let site = StatusSite(conninfo: conninfo, token: environment["PGPUSH_WEB_TOKEN"], version: PGPushVersion.current,
                              loopbackHostsOnly: loopback)
        let server: HTTPServer
        do {
            server = try HTTPServer(address: listen, setting: "PGPUSH_WEB_LISTEN", limits: StatusSite.limits) { site.answer($0) }
        } catch {
            throw UsageError(error.description)
        }
        print("pgpush web: serving http://\(host):\(server.port)/ as database role \(role); "
              + "actions \(site.actionsEnabled ? "on (PGPUSH_WEB_TOKEN)" : "off (no PGPUSH_WEB_TOKEN)")")
        if !loopback {
            printError("pgpush web: listening on \(host), not loopback: anyone who reaches it reads what role \(role) may read")
        }
        fflush(nil)
        StopSignals.wait(label: "pgpush-web-signals") {}
        server.stop()
        return 0
    }
}
