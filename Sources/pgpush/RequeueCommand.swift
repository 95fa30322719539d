import Foundation
import PGPushOperator
import Postgres

enum RequeueCommand {
    static let help = """
        pgpush requeue — send failed or expired notifications again

        Puts an app's failed and expired rows back to queued, through pgpush.requeue, as if
        new: attempts start from zero, due now, same lane. For after a fault now fixed: a
        certificate renewed late, a service down longer than the retries. A row keeps its
        expires_at: one already past it expires again (move it first to send it). A member
        of pgpush_app requeues only rows of the apps granted to it. Runs in batches of
        short transactions; safe while workers run.

        Flags:
          --app NAME            the app whose rows to requeue (required)
          --reason REASON       only rows whose last_reason is REASON (e.g. CouldNotConnect)
          --since TIME          only rows that finished at or after TIME: ISO-8601, UNIX seconds,
                                or relative to now (-2h, -30m, -1d)
          --service SERVICE     only rows of this service (apns, fcm, webpush)
          --database-url URL    libpq connection string or URI [DATABASE_URL, then PG* variables]

        Output: how many rows were requeued.

        Examples:
          pgpush requeue --app shop --reason CouldNotConnect --since -6h
          pgpush requeue --app shop --service fcm --reason QUOTA_EXCEEDED
        """

    static let flags: Set<String> = ["help", "app", "reason", "since", "service", "database-url"]

    static func run(_ arguments: Arguments) throws -> Int32 {
        guard let app = arguments.value("app") else { throw UsageError("--app is required: whose rows to requeue") }
        var request = RequeueRequest(app: app, reason: arguments.value("reason"), service: arguments.value("service"))
        if let text = arguments.value("since") {
            do {
                request.since = try EnqueueRequest.time(text, flag: "since")
            } catch {
                throw UsageError(error.description)
            }
        }
        let connection = try PostgresConnection(conninfo: try arguments.databaseURL())
        let requeued = try request.requeue(on: connection)
        print("requeued \(requeued) notification(s) of app \(app)")
        return 0
    }
}
