import Foundation
import Postgres
import PushQueue

/// `pgpush <command> [flags]`: a thin layer over the modules; each command is one file.
let usage = """
    pgpush — Apple push notifications from a PostgreSQL table

    Usage: pgpush <command> [flags]      (pgpush <command> --help for each command's flags)

    Commands:
      migrate     create or update the pgpush schema (safe to run concurrently)

    Exit codes: 0 success, 1 runtime failure (database, network, credentials),
                2 wrong usage or invalid configuration.
    """

let version = "0.1.0"

func runCommand(_ all: [String]) -> Int32 {
    guard let name = all.first else {
        print(usage)
        return 2
    }
    do {
        let arguments = try Arguments(all.dropFirst())
        switch name {
        case "migrate":
            if arguments.isSet("help") { print(MigrateCommand.help); return 0 }
            return try MigrateCommand.run(arguments)
        case "help", "--help", "-h":
            print(usage)
            return 0
        case "version", "--version":
            print("pgpush \(version)")
            return 0
        default:
            throw UsageError("unknown command \(name)")
        }
    } catch let error as UsageError {
        printError("pgpush \(name): \(error)\nRun 'pgpush \(name) --help' for usage.")
        return 2
    } catch {
        printError("pgpush \(name): \(error)")
        return 1
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

exit(runCommand(Array(CommandLine.arguments.dropFirst())))
