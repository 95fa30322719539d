import Foundation
import HTTP2TLS
import PushWorker

/// `pgpush <command> [flags]`: a thin layer over the modules; each command is one file.
struct Command {
    let name: String
    let summary: String
    let help: String
    /// Every flag of this command.
    let flags: Set<String>
    /// Flags of this command that take no value.
    var switches: Set<String> = ["help"]
    /// Switches that also accept `--name=value`.
    var optionalValues: Set<String> = []
    /// Whether bare arguments mean something to this command.
    var positionalAllowed = false
    let run: (Arguments) throws -> Int32
}

let commands = [
    Command(name: "migrate", summary: "create or update the pgpush schema (safe to run concurrently)",
            help: MigrateCommand.help, flags: MigrateCommand.flags, run: MigrateCommand.run),
    Command(name: "run", summary: "the worker: send queued notifications (APNs, FCM, Web Push), record every outcome",
            help: RunCommand.help, flags: RunCommand.flags, run: RunCommand.run),
    Command(name: "doctor", summary: "check configuration, credentials, database and APNs reachability",
            help: DoctorCommand.help, flags: DoctorCommand.flags, switches: DoctorCommand.switches, run: DoctorCommand.run),
    Command(name: "prune", summary: "retire finished notifications past a retention by dropping their partitions",
            help: PruneCommand.help, flags: PruneCommand.flags, run: PruneCommand.run),
    Command(name: "enqueue", summary: "add notifications to the queue (pgpush.enqueue / enqueue_many)",
            help: EnqueueCommand.help, flags: EnqueueCommand.flags, run: EnqueueCommand.run),
    Command(name: "requeue", summary: "send an app's failed or expired notifications again (pgpush.requeue)",
            help: RequeueCommand.help, flags: RequeueCommand.flags, run: RequeueCommand.run),
    Command(name: "channels", summary: "Live Activity broadcast channels: create, list, show, delete (Apple's API)",
            help: ChannelsCommand.help, flags: ChannelsCommand.flags, switches: ChannelsCommand.switches,
            positionalAllowed: true, run: ChannelsCommand.run),
    Command(name: "status", summary: "queue depth, throughput, errors, workers and apps, from the SQL views",
            help: StatusCommand.help, flags: StatusCommand.flags, switches: StatusCommand.switches,
            optionalValues: ["watch"], positionalAllowed: true, run: StatusCommand.run),
    Command(name: "web", summary: "a status page over HTTP: queue, failures, one row; requeue and cancel with a token",
            help: WebCommand.help, flags: WebCommand.flags, run: WebCommand.run),
    Command(name: "demo", summary: "everything on embedded defaults: PostgreSQL, simulator, worker, report",
            help: DemoCommand.help, flags: DemoCommand.flags, switches: DemoCommand.switches, run: DemoCommand.run),
    Command(name: "mock-apns", summary: "an APNs simulator over TLS + HTTP/2 (faults, reports) for tests and trials",
            help: MockAPNsCommand.help, flags: MockAPNsCommand.flags, switches: MockAPNsCommand.switches, run: MockAPNsCommand.run),
    Command(name: "mock-fcm", summary: "an FCM HTTP v1 simulator over TLS + HTTP/2 (token endpoint, faults, reports)",
            help: MockFCMCommand.help, flags: MockFCMCommand.flags, switches: MockFCMCommand.switches, run: MockFCMCommand.run),
    Command(name: "mock-webpush", summary: "a Web Push service simulator over TLS (VAPID, decryption, HTTP/2 or HTTP/1.1, faults)",
            help: MockWebPushCommand.help, flags: MockWebPushCommand.flags, switches: MockWebPushCommand.switches,
            run: MockWebPushCommand.run),
    Command(name: "bench", summary: "end-to-end benchmark: database, transport, worker, latency, faults, memory",
            help: BenchCommand.help, flags: BenchCommand.flags, switches: BenchCommand.switches, run: BenchCommand.run),
]

let usage = """
    pgpush — push notifications (APNs, FCM, Web Push) from a PostgreSQL table

    Usage: pgpush <command> [flags]      (pgpush <command> --help for each command's flags)

    Commands:
    \(commands.map { "  " + $0.name.padding(toLength: 12, withPad: " ", startingAt: 0) + $0.summary }.joined(separator: "\n"))

    Exit codes: 0 success, 1 runtime failure (database, network, credentials),
                2 wrong usage or invalid configuration.
    """

@MainActor
func runCommand(_ all: [String]) -> Int32 {
    guard let name = all.first else {
        print(usage)
        return 2
    }
    switch name {
    case "help", "--help", "-h":
        print(usage)
        return 0
    case "version", "--version":
        print("pgpush \(PGPushVersion.current)")
        return 0
    default:
        break
    }
    guard let command = commands.first(where: { $0.name == name }) else {
        printError("pgpush: unknown command \(name)\n\n\(usage)")
        return 2
    }
    if Arguments.asksForHelp(all.dropFirst()) {
        print(command.help)
        return 0
    }
    do {
        let arguments = try Arguments(all.dropFirst(), flags: command.flags, switchNames: command.switches,
                                      optionalValues: command.optionalValues, positionalAllowed: command.positionalAllowed)
        return try command.run(arguments)
    } catch let error as UsageError {
        printError("pgpush \(name): \(error)\nRun 'pgpush \(name) --help' for usage.")
        return 2
    } catch {
        printError("pgpush \(name): \(error)")
        return 1
    }
}

func printError(_ message: String) {
    StandardStreams.writeError(message + "\n")
}

// First, before anything uses OpenSSL: no thread can outlive its global state.
OpenSSLExit.leaveCleanupToTheKernel()
StandardStreams.ignoreBrokenPipes()
let status = runCommand(Array(CommandLine.arguments.dropFirst()))
// Connections are closed by their own threads, not cut off by the exit.
IOThreads.stopAndJoinAll()
exit(status)
