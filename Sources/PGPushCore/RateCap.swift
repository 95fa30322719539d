/// The per-connection rate cap: the operator's one setting for every service
/// (`PGPUSH_RATE_PER_CONNECTION`, `rate_per_connection`), requests per second over any
/// one-second window, per connection. Its default and what 0 means are written here once.
package enum RateCap {
    /// The default: APNs's guidance for one connection, kept for every service (FCM has no
    /// per-connection rule, but the cap is the operator's tool).
    package static let standardPerConnection = 100

    /// The window the cap counts over, as the service counts it. Both places that hold a
    /// connection to the cap measure from it: the transport's hard count (`SubmitWindow`,
    /// 0.2 ms longer) and the pool's even pacing (`ConnectionRate`, 4 ms longer).
    package static let window: Duration = .seconds(1)

    /// The cap a setting asks for: nil (no cap, benchmarks only) for 0, or for no setting.
    package static func perConnection(_ setting: Int?) -> Int? {
        guard let setting, setting > 0 else { return nil }
        return setting
    }
}
