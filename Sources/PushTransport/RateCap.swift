/// The per-connection rate cap: the operator's one setting for every service
/// (`PGPUSH_RATE_PER_CONNECTION`, `rate_per_connection`), requests per second over any
/// one-second window, per connection. Its default and what 0 means are written here once.
package enum RateCap {
    /// The default: APNs's guidance for one connection, kept for every service (FCM has no
    /// per-connection rule, but the cap is the operator's tool).
    package static let standardPerConnection = 100

    /// The cap a setting asks for: nil (no cap, benchmarks only) for 0, or for no setting.
    package static func perConnection(_ setting: Int?) -> Int? {
        guard let setting, setting > 0 else { return nil }
        return setting
    }
}
