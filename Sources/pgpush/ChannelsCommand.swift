import APNsClient
import Foundation
import Locking
import PGPushOperator
import Postgres
import PushWorker

enum ChannelsCommand {
    static let help = """
        pgpush channels — Live Activity broadcast channels of an app (iOS 18+)

        Usage:
          pgpush channels create --app A [--storage-policy 0|1]
          pgpush channels list   --app A
          pgpush channels show   --app A --channel ID
          pgpush channels delete --app A --channel ID
        each with --json for one JSON object (snake_case keys) per channel.

        Speaks Apple's channel management API with the app's own credentials (the key or
        certificate `pgpush run` uses: same flags, variables and --config file), on Apple's
        management host for the app's environment: api-manage-broadcast.push.apple.com:2196,
        sandbox api-manage-broadcast.sandbox.push.apple.com:2195. Every answer is written to
        pgpush.channels (DATABASE_URL, as the worker's role): create and show record the
        channel and its storage policy, delete and a channel APNs does not know mark it deleted
        (workers then fail its rows without a request), list records channels created
        elsewhere and marks recorded ones APNs no longer lists as deleted.

        Flags:
          --app NAME                the app (from --config, or the single-app flags of `pgpush run`)
          --channel ID              the channel's base64 id (show, delete)
          --storage-policy 0|1      create: 1 (default) keeps the most recent message for devices
                                    offline at the time; 0 keeps nothing (every broadcast is then sent
                                    with expiration 0) for a higher publishing budget
          --apns-channels-url URL   [PGPUSH_APNS_CHANNELS_URL] another management host, e.g. the
                                    simulator's https://127.0.0.1:2197 (it serves both APIs)
          --json                    JSON output
        and every flag of `pgpush run`.

        Limits: 10,000 channels per app and environment (create then fails, saying so); a
        deleted id is never reissued. 429 and 5xx are retried like pushes (a create only
        after 429: a lost answer may have created it, and `list` shows whether it did).

        Exit code: 0 done, 1 APNs or the database refused or failed (said in words), 2 usage.
        """

    static let flags = RunCommand.flags.union(["channel", "storage-policy", "apns-channels-url", "json"])
    static let switches: Set<String> = ["help", "json"]
    static let actions = ["create", "list", "show", "delete"]

    static func run(_ arguments: Arguments) throws -> Int32 {
        guard arguments.positional.count == 1, let action = arguments.positional.first, actions.contains(action) else {
            throw UsageError("pgpush channels needs one of \(actions.joined(separator: ", ")) (see pgpush channels --help)")
        }
        let channel = arguments.value("channel")
        if ["show", "delete"].contains(action), channel == nil { throw UsageError("pgpush channels \(action) needs --channel ID") }
        let policy = arguments.value("storage-policy")
        if let policy, action != "create" || !(policy == "0" || policy == "1") {
            throw UsageError("--storage-policy is 0 or 1, and only for create")
        }
        let storesMessages = policy != "0"
        var runFlags: [String: String] = [:]
        for flag in RunCommand.flags { if let value = arguments.value(flag) { runFlags[flag] = value } }
        let environment = ProcessInfo.processInfo.environment
        let configuration: WorkerConfiguration
        do {
            configuration = try WorkerConfiguration.load(flags: runFlags, environment: environment)
        } catch {
            throw UsageError(error.description)
        }
        let named = arguments.value("app") ?? environment["PGPUSH_APP"]
        guard let app = named.flatMap({ name in configuration.apps.first { $0.name == name } })
                ?? (configuration.apps.count == 1 ? configuration.apps.first : nil) else {
            throw UsageError("--app names none of the configured apps (\(configuration.apps.map(\.name).joined(separator: ", ")))")
        }
        let client: ChannelManagementClient
        do {
            client = try SenderFactory.makeChannelManagementClient(
                for: app, channelsURL: arguments.value("apns-channels-url") ?? environment["PGPUSH_APNS_CHANNELS_URL"])
        } catch {
            throw UsageError(error.description)
        }
        defer { client.close() }
        let conninfo = configuration.databaseURL
        let result = Locked<Result<[ChannelRecord], any Error>?>(nil)
        _ = try blockOn {
            do {
                let management = ChannelManagement(
                    appName: app.name, environment: app.environment, client: client,
                    database: try PostgresConnection(conninfo: conninfo))
                let records: [ChannelRecord] = switch action {
                case "create": [try await management.create(storesMessages: storesMessages)]
                case "show": [try await management.show(channel ?? "")]
                case "delete": [try await management.delete(channel ?? "")]
                default: try await management.list()
                }
                result.withLock { $0 = .success(records) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
        }
        switch result.withLock({ $0 }) {
        case .success(let records)?:
            print(arguments.isSet("json") ? json(records) : text(records, action: action, app: app.name))
            return 0
        case .failure(let error)?:
            printError("pgpush channels \(action): \(error)")
            return 1
        case nil:
            return 1
        }
    }

    static func json(_ records: [ChannelRecord]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return records.compactMap { (try? encoder.encode($0)).map { String(decoding: $0, as: UTF8.self) } }.joined(separator: "\n")
    }

    static func text(_ records: [ChannelRecord], action: String, app: String) -> String {
        let heading = switch action {
        case "create": "created a channel for app \(app)"
        case "delete": "deleted (APNs never reissues the id)"
        case "list": "\(records.count) channel(s) of app \(app)"
        default: "channel of app \(app)"
        }
        var table = TextTable(headers: ["channel id", "storage", "environment", "created", "deleted", "refused"])
        for record in records {
            let storage = switch record.messageStoragePolicy {
            case 0?: "0 (nothing stored)"
            case 1?: "1 (latest kept)"
            default: "unknown"
            }
            let time = { (seconds: Double?) in seconds.map { Date(timeIntervalSince1970: $0).formatted(.iso8601) } ?? "-" }
            table.append([record.channelID, storage, record.environment ?? "-", time(record.createdAt), time(record.deletedAt),
                          record.refusedReason ?? "-"])
        }
        return heading + "\n" + table.rendered()
    }
}
