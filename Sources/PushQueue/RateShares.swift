import PGPushCore
import Postgres

/// This worker's share of an app's `rate_per_app`, as `pgpush.take_rate_share` granted it
/// (sql/018_daily_operations.sql): requests per second it may send for the app and service,
/// and the fair share it will reach once the other workers have lowered theirs.
package struct RateShareGrant: Sendable, Equatable {
    package let share: Int
    package let fair: Int

    package init(share: Int, fair: Int) {
        self.share = share
        self.fair = fair
    }
}

extension NotificationQueue {
    package static let takeRateShareSQL = "SELECT share, fair FROM pgpush.take_rate_share($1, $2, $3, $4, $5)"
    package static let releaseRateShareSQL = "SELECT pgpush.release_rate_share($1, $2, $3)"

    /// Leases (or renews) this worker's share of `rate` requests/s for the app and service.
    package func takeRateShare(app: String, service: Service, rate: Int, lease: Duration) throws -> RateShareGrant {
        let result = try connection.query(Self.takeRateShareSQL, [workerID, app, service.rawValue, rate, lease.seconds])
        return RateShareGrant(share: result.int(0, 0) ?? 0, fair: result.int(0, 1) ?? 0)
    }

    /// Gives the share back once the worker has stopped sending for the app and service.
    package func releaseRateShare(app: String, service: Service) throws {
        try connection.query(Self.releaseRateShareSQL, [workerID, app, service.rawValue])
    }
}
