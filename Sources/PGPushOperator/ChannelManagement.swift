import APNsClient
import APNsCore
import Foundation
import PGPushCore
import Postgres

/// One channel as `pgpush channels` shows it: what APNs said and what `pgpush.channels` records.
package struct ChannelRecord: Sendable, Equatable, Encodable {
    package var app: String
    package var channelID: String
    /// 0: nothing stored (broadcasts go with expiration 0), 1: the most recent message
    /// stored; nil when not known (a channel pgpush did not create and has not read).
    package var messageStoragePolicy: Int?
    package var environment: String?
    /// UNIX seconds.
    package var createdAt: Double?
    package var deletedAt: Double?
    /// The last reason APNs refused a broadcast to the channel for.
    package var refusedReason: String?

    enum CodingKeys: String, CodingKey {
        case app, channelID = "channel_id", messageStoragePolicy = "message_storage_policy", environment
        case createdAt = "created_at", deletedAt = "deleted_at", refusedReason = "refused_reason"
    }
}

/// `pgpush channels`: Apple's channel management API for one app, with `pgpush.channels`
/// kept in step with every answer. APNs is the authority on which channels exist; the table
/// is what workers read (a deleted channel's rows fail without a request, a channel that
/// stores nothing gets expiration 0) and what applications can see.
package final class ChannelManagement {
    /// The app's name in `pgpush.channels`.
    package let appName: String
    /// Which APNs environment the app's channels live in: the table records it per channel.
    private let environment: APNsEnvironment
    package let client: ChannelManagementClient
    private let database: PostgresConnection

    package init(appName: String, environment: APNsEnvironment, client: ChannelManagementClient,
                database: PostgresConnection) {
        self.appName = appName
        self.environment = environment
        self.client = client
        self.database = database
    }

    /// The table's name for `environment`.
    private var environmentLabel: String { environment == .production ? "production" : "sandbox" }

    package func create(storesMessages: Bool) async throws -> ChannelRecord {
        let id = try await client.create(storesMessages: storesMessages)
        try database.query("""
            INSERT INTO pgpush.channels (app, channel_id, message_storage_policy, environment) VALUES ($1, $2, $3, $4)
            ON CONFLICT (app, channel_id) DO UPDATE SET message_storage_policy = EXCLUDED.message_storage_policy,
                                                         environment = EXCLUDED.environment, deleted_at = NULL
            """, [appName, id, storesMessages ? 1 : 0, environmentLabel])
        return try record(id)
    }

    /// The channels APNs lists for the app: each recorded in the table (those created
    /// elsewhere too); recorded ones of this environment that APNs no longer lists are
    /// marked deleted.
    package func list() async throws -> [ChannelRecord] {
        let ids = try await client.list()
        try database.transaction {
            try database.query("""
                INSERT INTO pgpush.channels (app, channel_id, environment)
                SELECT $1, id, $3 FROM unnest($2::text[]) AS id
                ON CONFLICT (app, channel_id) DO NOTHING
                """, [appName, ids, environmentLabel])
            try database.query("""
                UPDATE pgpush.channels SET deleted_at = now()
                 WHERE app = $1 AND deleted_at IS NULL AND channel_id <> ALL($2::text[])
                   AND coalesce(environment, $3) = $3
                """, [appName, ids, environmentLabel])
        }
        return try records(ids)
    }

    package func show(_ id: String) async throws -> ChannelRecord {
        do {
            let policy = try await client.read(channelID: id)
            try database.query("""
                INSERT INTO pgpush.channels (app, channel_id, message_storage_policy, environment) VALUES ($1, $2, $3, $4)
                ON CONFLICT (app, channel_id) DO UPDATE SET message_storage_policy = EXCLUDED.message_storage_policy
                """, [appName, id, policy, environmentLabel])
            return try record(id)
        } catch let error as ChannelManagementError {
            try markGoneIfUnknown(id, error)
            throw error
        }
    }

    package func delete(_ id: String) async throws -> ChannelRecord {
        do {
            try await client.delete(channelID: id)
        } catch {
            try markGoneIfUnknown(id, error)
            throw error
        }
        try markDeleted(id)
        return try record(id)
    }

    /// APNs knows no such channel: it will never exist again (ids are not reissued).
    private func markGoneIfUnknown(_ id: String, _ error: ChannelManagementError) throws {
        if error.reason == "ChannelNotRegistered" { try markDeleted(id) }
    }

    private func markDeleted(_ id: String) throws {
        try database.query("""
            INSERT INTO pgpush.channels (app, channel_id, environment, deleted_at) VALUES ($1, $2, $3, now())
            ON CONFLICT (app, channel_id) DO UPDATE SET deleted_at = coalesce(pgpush.channels.deleted_at, now())
            """, [appName, id, environmentLabel])
    }

    private func record(_ id: String) throws -> ChannelRecord {
        guard let found = try records([id]).first else { throw ChannelTableError(channelID: id) }
        return found
    }

    private func records(_ ids: [String]) throws -> [ChannelRecord] {
        let result = try database.query("""
            SELECT app, channel_id, message_storage_policy, environment, extract(epoch FROM created_at),
                   extract(epoch FROM deleted_at), refused_reason
              FROM pgpush.channels WHERE app = $1 AND channel_id = ANY($2::text[]) ORDER BY created_at, channel_id
            """, [appName, ids])
        return (0..<result.rowCount).map { row in
            ChannelRecord(app: result.string(row, 0) ?? "", channelID: result.string(row, 1) ?? "",
                          messageStoragePolicy: result.int(row, 2), environment: result.string(row, 3),
                          createdAt: result.double(row, 4), deletedAt: result.double(row, 5), refusedReason: result.string(row, 6))
        }
    }
}

/// The table lost a row the command just wrote (a concurrent DELETE by hand).
struct ChannelTableError: Error, CustomStringConvertible {
    let channelID: String
    var description: String { "channel \(channelID) is not in pgpush.channels after writing it" }
}
