import Foundation
import PGPushOperator
import Postgres

enum StatusCommand {
    static let help = """
        pgpush status — what the queue, the workers and the apps are doing

        Reads only the monitoring views and tables (pgpush.queue_depth, throughput,
        error_breakdown, worker_health, app_health, invalid_tokens), so it needs nothing
        but read access to schema pgpush:
          queue depth per app (due now, scheduled, being sent) and the oldest due row's age,
          notifications finished per minute over the last 10 minutes,
          the most frequent errors of the last 24 hours,
          invalid tokens per app, every worker (alive or not, heartbeat age, counters),
          and each app's health (e.g. InvalidProviderToken, likely environment mismatch).

        Flags:
          --app NAME            only this app (workers: those serving it)
          --json                one JSON object (snake_case keys) for scripts and monitoring
          --watch [SECONDS]     refresh every SECONDS (default 2) until Ctrl-C; clears the screen
                                on a terminal; with --json prints one object per line
          --database-url URL    libpq connection string or URI [DATABASE_URL, then PG* variables]

        Examples:
          pgpush status
          pgpush status --app shop --watch 5
          pgpush status --json | jq '.queue[] | select(.oldest_due_seconds > 60)'
        """

    static let flags: Set<String> = ["help", "database-url", "app", "json", "watch"]
    static let switches: Set<String> = ["help", "json", "watch"]

    static func run(_ arguments: Arguments) throws -> Int32 {
        let interval = try watchInterval(arguments)
        let json = arguments.isSet("json")
        let connection = try PostgresConnection(conninfo: try arguments.databaseURL())
        let clearScreen = interval != nil && !json && isatty(STDOUT_FILENO) == 1
        while true {
            let snapshot: StatusSnapshot
            do {
                snapshot = try StatusSnapshot.load(from: connection, app: arguments.value("app"))
            } catch let error as PostgresError where error.sqlState == "42P01" || error.sqlState == "3F000" {
                throw StatusError("schema pgpush is missing or incomplete in this database: run pgpush migrate (\(error.message))")
            } catch let error as PostgresError where interval != nil && error.isConnectionProblem {
                // Watching outlives a database restart: say so, and try again next round.
                printError("pgpush status: \(error) — retrying")
                Thread.sleep(forTimeInterval: interval ?? 2)
                try? connection.reconnect()
                continue
            }
            let text = json ? String(decoding: try snapshot.jsonData(), as: UTF8.self) : snapshot.rendered()
            print((clearScreen ? "\u{1B}[H\u{1B}[2J" : "") + text)
            guard let interval else { return 0 }
            if !json && !clearScreen { print("") }
            fflush(nil)
            Thread.sleep(forTimeInterval: interval)
        }
    }

    /// `--watch`, `--watch 5` or `--watch=5`; nil without `--watch`.
    private static func watchInterval(_ arguments: Arguments) throws(UsageError) -> Double? {
        var text = arguments.value("watch")
        if arguments.isSet("watch") {
            text = arguments.positional.first ?? "2"
            guard arguments.positional.count <= 1 else { throw UsageError("unexpected argument \(arguments.positional[1])") }
        } else if let first = arguments.positional.first {
            throw UsageError("unexpected argument \(first)")
        }
        guard let text else { return nil }
        guard let seconds = Double(text), seconds >= 0.2, seconds <= 86_400 else {
            throw UsageError("--watch takes seconds between 0.2 and 86400, got \(text)")
        }
        return seconds
    }
}

struct StatusError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
