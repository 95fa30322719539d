import Foundation
import Postgres

/// What `pgpush enqueue` inserts: one payload for one or more device tokens (or Web Push
/// subscriptions), with
/// every column of `pgpush.notifications` an application may set. Built from the command's flags;
/// the database stays the judge of the row (its CHECK constraints), so this only
/// checks what it must interpret itself (times, numbers, which payload flag).
package struct EnqueueRequest: Sendable, Equatable {
    package var tokens: [String]
    /// Web Push subscriptions (`PushSubscription.toJSON()` text), instead of tokens.
    package var subscriptions: [String] = []
    package var payload: String
    package var app: String?
    /// `apns` (nil, or `webpush` with subscriptions), `fcm` or `webpush`.
    package var service: String?
    package var pushType: String?
    package var priority: Int?
    package var topic: String?
    package var collapseID: String?
    package var expiresAt: Date?
    package var sendAfter: Date?
    package var idempotencyKey: String?
    /// `urgent`, `normal` (nil) or `bulk`: claim order within the app and service.
    package var lane: String?

    package init(tokens: [String], payload: String) {
        self.tokens = tokens
        self.payload = payload
    }

    /// Reads the flags (name without `--` → value). `tokensFromList` are the tokens of
    /// `--tokens-file`, `subscriptionsFromList` the lines of `--subscriptions-file`, already read
    /// by the caller (a file or stdin).
    package init(flags: [String: String], tokensFromList: [String] = [], subscriptionsFromList: [String] = [],
                 now: Date = Date()) throws(EnqueueUsageError) {
        var tokens = tokensFromList
        if let token = flags["token"] { tokens.insert(token.trimmingCharacters(in: .whitespaces), at: 0) }
        var subscriptions = subscriptionsFromList
        if let subscription = flags["subscription"] { subscriptions.insert(subscription, at: 0) }
        guard tokens.isEmpty || subscriptions.isEmpty else {
            throw EnqueueUsageError("give device tokens or Web Push subscriptions, not both")
        }
        guard !tokens.isEmpty || !subscriptions.isEmpty else {
            throw EnqueueUsageError(flags["tokens-file"] != nil ? "the tokens file holds no token"
                : flags["subscriptions-file"] != nil ? "the subscriptions file holds no subscription"
                : "give a device token with --token T (many with --tokens-file FILE, - for stdin), or a Web Push "
                    + "subscription with --subscription JSON (many with --subscriptions-file FILE)")
        }
        if !subscriptions.isEmpty, let service = flags["service"], service != "webpush" {
            throw EnqueueUsageError("a subscription is a Web Push target: --service webpush (or leave it out), got \"\(service)\"")
        }
        let service = flags["service"] ?? (subscriptions.isEmpty ? nil : "webpush")
        switch (flags["payload"], flags["alert"]) {
        case (.some, .some):
            throw EnqueueUsageError("give either --payload JSON or --alert TEXT, not both")
        case (.some(let json), nil):
            payload = json
        case (nil, .some(let alert)):
            payload = switch service {
            case "fcm": Self.fcmAlertPayload(alert)
            case "webpush": Self.webPushAlertPayload(alert)
            default: Self.alertPayload(alert)
            }
        case (nil, nil):
            throw EnqueueUsageError("give the notification: --alert TEXT, or --payload JSON")
        }
        self.tokens = tokens
        self.subscriptions = subscriptions
        self.service = service
        app = flags["app"]
        pushType = flags["push-type"]
        topic = flags["topic"]
        collapseID = flags["collapse-id"]
        idempotencyKey = flags["idempotency-key"]
        lane = flags["lane"]
        if let text = flags["priority"] {
            guard let value = Int(text.trimmingCharacters(in: .whitespaces)) else {
                throw EnqueueUsageError("--priority must be 10, 5 or 1, got \"\(text)\"")
            }
            priority = value
        }
        if let text = flags["expires-at"] { expiresAt = try Self.time(text, flag: "expires-at", now: now) }
        if let text = flags["send-after"] { sendAfter = try Self.time(text, flag: "send-after", now: now) }
    }

    /// `{"aps":{"alert":TEXT}}` with TEXT escaped as a JSON string.
    package static func alertPayload(_ text: String) -> String {
        let aps: [String: [String: String]] = ["aps": ["alert": text]]
        let data = (try? JSONSerialization.data(withJSONObject: aps, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// `{"notification":{"body":TEXT}}`: the FCM message a text makes.
    package static func fcmAlertPayload(_ text: String) -> String {
        let message: [String: [String: String]] = ["notification": ["body": text]]
        let data = (try? JSONSerialization.data(withJSONObject: message, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// `{"body":TEXT}`: what a web app's service worker reads from a text.
    package static func webPushAlertPayload(_ text: String) -> String {
        let message: [String: String] = ["body": text]
        let data = (try? JSONSerialization.data(withJSONObject: message, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// ISO-8601 (`2026-01-02T03:04:05Z`, fractional seconds and offsets allowed), UNIX
    /// seconds (`1767323045`), or relative to now (`+30s`, `+5m`, `+2h`, `-1m`).
    package static func time(_ text: String, flag: String, now: Date = Date()) throws(EnqueueUsageError) -> Date {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed), trimmed.first?.isNumber == true {
            return Date(timeIntervalSince1970: seconds)
        }
        if let sign = trimmed.first, sign == "+" || sign == "-", let unit = trimmed.last,
           let amount = Double(trimmed.dropFirst().dropLast()) {
            let scale: Double? = switch unit {
            case "s": 1
            case "m": 60
            case "h": 3600
            case "d": 86_400
            default: nil
            }
            if let scale { return now.addingTimeInterval((sign == "-" ? -1 : 1) * amount * scale) }
        }
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime]] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            if let date = formatter.date(from: trimmed) { return date }
        }
        throw EnqueueUsageError("--\(flag): \"\(text)\" is not a time: use ISO-8601 (2026-01-02T03:04:05Z), "
                                + "UNIX seconds (1767323045) or +30s / +5m / +2h")
    }

    /// Device tokens of a tokens file: one per line; blank lines and `#` comments skipped.
    package static func tokens(fromList text: String) -> [String] {
        text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    /// Targets a line each (`--tokens-file`, `--subscriptions-file`): blank lines and `#` comments skipped.
    package static func lines(of text: String) -> [String] { tokens(fromList: text) }

    /// Inserts the rows with `pgpush.enqueue` (one target) or `pgpush.enqueue_many`, and
    /// returns their ids. With an idempotency key already used, `enqueue` returns the
    /// existing row's id and `enqueue_many` skips the token, as the SQL functions do.
    package func enqueue(on connection: PostgresConnection) throws -> [Int64] {
        let arguments = """
            payload => $2::jsonb, app => coalesce($3, 'default'), push_type => coalesce($4, 'alert'),
            priority => $5::integer, topic => $6, collapse_id => $7, expires_at => $8::timestamptz,
            send_after => coalesce($9::timestamptz, now()), idempotency_key => $10, service => $11,
            lane => coalesce($12, 'normal')
            """
        let timestamps = ISO8601DateFormatter()
        timestamps.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let rest: [(any PostgresParameter)?] = [
            payload, app, pushType, priority, topic, collapseID,
            expiresAt.map(timestamps.string(from:)), sendAfter.map(timestamps.string(from:)), idempotencyKey, service, lane,
        ]
        let result: PostgresResult
        if subscriptions.count == 1 {
            result = try connection.query("SELECT pgpush.enqueue(subscription => $1::jsonb, \(arguments))",
                                          [subscriptions[0] as (any PostgresParameter)?] + rest)
        } else if !subscriptions.isEmpty {
            let array = "[" + subscriptions.joined(separator: ",") + "]"
            result = try connection.query("SELECT pgpush.enqueue_many(subscriptions => $1::jsonb, \(arguments))",
                                          [array as (any PostgresParameter)?] + rest)
        } else if tokens.count == 1 {
            result = try connection.query("SELECT pgpush.enqueue(device_token => $1, \(arguments))", [tokens[0] as (any PostgresParameter)?] + rest)
        } else {
            result = try connection.query("SELECT pgpush.enqueue_many(device_tokens => $1, \(arguments))", [tokens as (any PostgresParameter)?] + rest)
        }
        return (0..<result.rowCount).compactMap { result.int64($0, 0) }
    }
}

/// A flag of `pgpush enqueue` is missing or malformed (exit code 2).
package struct EnqueueUsageError: Error, CustomStringConvertible, Sendable, Equatable {
    package let description: String
    package init(_ description: String) { self.description = description }
}
