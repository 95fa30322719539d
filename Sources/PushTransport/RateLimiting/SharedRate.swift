/// An app's send rate shared by every worker (`rate_per_app`): this worker's share of it,
/// leased from the database, as a pure value with the time passed in.
///
/// Sends within the share are paced and capped as a connection's are (`ConnectionRate`), over
/// a window of 1.05 s rather than a second: what the workers send together is counted where
/// the service receives it, after each send has crossed this worker's pool, its connection
/// and the network, and the 50 ms leave room for those delays to differ from one send to the
/// next (a share of 150/s is sent at about 143/s). A send is counted when it passes, at the
/// instant it passes, never at an instant planned for it: a sender woken late is counted late.
///
/// The share holds only while its lease does, measured from before the worker asked for it,
/// so that the lease ends here no later than where the database counts it: a worker that
/// cannot renew stops sending for the app. No share, or an ended lease, means no send until
/// the next grant.
package struct SharedRate: Sendable {
    package typealias Instant = ContinuousClock.Instant

    /// What a send asked for at an instant may do.
    package enum Admission: Equatable, Sendable {
        /// Go now: counted.
        case go
        /// Ask again at this instant.
        case wait(until: Instant)
        /// No share to send within before the lease ends: wait for the next grant.
        case noShare
    }

    /// The pacing window: a second and the margin for delays on the way.
    package static let window: Duration = .milliseconds(1050)

    /// The rate configured for the app, the most any share can be.
    package let rate: Int
    package private(set) var share = 0
    private var pace: ConnectionRate
    private var validUntil: Instant?

    package init(rate: Int) {
        self.rate = max(rate, 1)
        pace = ConnectionRate(limit: self.rate, window: Self.window)
    }

    /// A share granted for `lease`, asked for at `askedAt`.
    package mutating func granted(share: Int, askedAt: Instant, lease: Duration) {
        self.share = min(max(share, 0), rate)
        validUntil = askedAt + lease
        if self.share > 0 { pace.setLimit(self.share) }
    }

    /// Whether a send asked for at `now` may go; `.go` counts it.
    package mutating func admit(at now: Instant) -> Admission {
        guard share > 0, let validUntil, now < validUntil else { return .noShare }
        let at = PoolInstant(now)
        let start = pace.earliestStart(at: at)
        guard start <= at else { return start.continuous < validUntil ? .wait(until: start.continuous) : .noShare }
        pace.record(at: at)
        return .go
    }
}
