import Foundation
import PGPushOperator
import Postgres

enum EnqueueCommand {
    static let help = """
        pgpush enqueue — add notifications to the queue

        Inserts through pgpush.enqueue (one token) or pgpush.enqueue_many (a tokens file),
        exactly what an application's own INSERT would do. The database checks the row; a
        rejected row is explained in words (exit code 2).

        Flags:
          --token TOKEN            the device token (APNs: hex digits, even length, up to 400; FCM: the
                                   registration token)
          --tokens-file FILE       one token per line (blank lines and # comments skipped);
                                   - reads standard input; one payload goes to every token
          --subscription JSON      a Web Push subscription, as PushSubscription.toJSON() gives it
                                   ({"endpoint":"https://…","keys":{"p256dh":"…","auth":"…"}})
          --subscriptions-file FILE  one subscription (JSON) per line; - reads standard input
          --service SERVICE        apns (default), fcm, or webpush (the default with subscriptions)
          --alert TEXT             the notification text: payload {"aps":{"alert":TEXT}}
                                   (FCM: {"notification":{"body":TEXT}}), or
          --payload JSON           the whole payload, a JSON object
          --app NAME               which configured app sends it (default: default)
          --push-type TYPE         alert (default), background, voip, complication, fileprovider, mdm,
                                   location, liveactivity, pushtotalk, widgets, controls
          --priority N             10, 5 or 1 (default: derived from the push type)
          --topic TOPIC            apns-topic (default: the app's bundle id + the push type's suffix)
          --collapse-id ID         apns-collapse-id, at most 64 bytes
          --expires-at TIME        not sent after TIME: the row becomes expired instead
          --send-after TIME        not sent before TIME (scheduling)
          --idempotency-key KEY    unique per app: enqueueing the same key again returns the first
                                   row's id (with a tokens file each row's key is KEY:TOKEN)
          --lane LANE              urgent, normal (default) or bulk: urgent rows are claimed before
                                   normal ones, normal before bulk (a login code before a campaign)
          --database-url URL       libpq connection string or URI [DATABASE_URL, then PG* variables]

        TIME is ISO-8601 (2026-01-02T03:04:05Z), UNIX seconds (1767323045), or relative to now
        (+30s, +5m, +2h, +1d).

        Output: the new row's id; with a tokens file, one id per line (standard output) and a
        count on standard error.

        Examples:
          pgpush enqueue --token 6f1c…9ab0 --alert "Your order has shipped"
          pgpush enqueue --token 6f1c…9ab0 --push-type background --payload '{"aps":{"content-available":1}}'
          pgpush enqueue --service fcm --token "fGx3…:APA91b…" --alert "Your order has shipped"
          pgpush enqueue --subscription "$(cat subscription.json)" --payload '{"title":"Shipped","body":"Your order is on its way"}'
          pgpush enqueue --tokens-file tokens.txt --alert "Flash sale" --expires-at +2h --collapse-id sale --lane bulk
          pgpush enqueue --token 6f1c…9ab0 --alert "Your code is 123456" --lane urgent
          psql -Atc "SELECT token FROM devices" | pgpush enqueue --tokens-file - --alert "Hello" --app shop
        """

    static let flags: Set<String> = [
        "help", "database-url", "token", "tokens-file", "alert", "payload", "app", "push-type", "priority", "topic",
        "collapse-id", "expires-at", "send-after", "idempotency-key", "service", "subscription", "subscriptions-file",
        "lane",
    ]

    static func run(_ arguments: Arguments) throws -> Int32 {
        var flagValues: [String: String] = [:]
        for flag in flags { if let value = arguments.value(flag) { flagValues[flag] = value } }
        var listed: [String] = []
        if let path = arguments.value("tokens-file") {
            listed = EnqueueRequest.lines(of: try readTokens(path))
        }
        var subscriptions: [String] = []
        if let path = arguments.value("subscriptions-file") {
            subscriptions = EnqueueRequest.lines(of: try readTokens(path))
        }
        let request: EnqueueRequest
        do {
            request = try EnqueueRequest(flags: flagValues, tokensFromList: listed, subscriptionsFromList: subscriptions)
        } catch {
            throw UsageError(error.description)
        }
        let connection = try PostgresConnection(conninfo: try arguments.databaseURL())
        let ids: [Int64]
        do {
            ids = try request.enqueue(on: connection)
        } catch let error as PostgresError {
            guard let sentence = ConstraintExplanation.explain(error) else { throw error }
            printError("pgpush enqueue: rejected by the database: \(sentence)")
            return 2
        }
        let targets = request.tokens.count + request.subscriptions.count
        if targets == 1 {
            print(ids.first.map(String.init) ?? "")
        } else {
            print(ids.map(String.init).joined(separator: "\n"))
            let skipped = targets - ids.count
            printError("enqueued \(ids.count) notification(s)"
                       + (skipped > 0 ? "; \(skipped) skipped (idempotency key already used)" : ""))
        }
        return 0
    }

    private static func readTokens(_ path: String) throws -> String {
        let data: Data
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw UsageError("cannot read the tokens file \(path)")
            }
            data = contents
        }
        return String(decoding: data, as: UTF8.self)
    }
}
