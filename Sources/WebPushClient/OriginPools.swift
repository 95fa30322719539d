/// Which push service origins one app has connections to: a pool per origin, made when a row
/// first needs it, shared by every row to that origin, closed after `idleTimeout` without a
/// request, and at most `limit` of them at once (the least recently used idle one makes room).
///
/// Pure: the sender holds it under a lock, gives it the time, and closes the pools it hands
/// back. `Pool` is whatever the sender keeps per origin.
struct OriginPools<Pool> {
    private struct Entry {
        var pool: Pool
        /// Requests checked out and not yet checked in.
        var inUse: Int
        var lastUsed: ContinuousClock.Instant
    }

    /// What `checkOut` decided.
    enum CheckOut {
        /// Send on this pool; check it in when done. `closing`: a pool evicted to make room.
        case use(Pool, closing: Pool?)
        /// `limit` origins are open and every one has a request in flight.
        case full
        case shutDown
    }

    let limit: Int
    let idleTimeout: Duration
    private var entries: [PushServiceOrigin: Entry] = [:]
    private var isShutDown = false

    init(limit: Int, idleTimeout: Duration) {
        self.limit = limit
        self.idleTimeout = idleTimeout
    }

    var origins: [PushServiceOrigin] { Array(entries.keys) }
    var pools: [Pool] { entries.values.map(\.pool) }

    /// A request to `origin` begins. `make` is called when the origin has no pool yet.
    mutating func checkOut(_ origin: PushServiceOrigin, at now: ContinuousClock.Instant, make: () -> Pool) -> CheckOut {
        guard !isShutDown else { return .shutDown }
        if var entry = entries[origin] {
            entry.inUse += 1
            entry.lastUsed = now
            entries[origin] = entry
            return .use(entry.pool, closing: nil)
        }
        var closing: Pool?
        if entries.count >= limit {
            guard let oldest = entries.filter({ $0.value.inUse == 0 }).min(by: { $0.value.lastUsed < $1.value.lastUsed }) else {
                return .full
            }
            closing = entries.removeValue(forKey: oldest.key)?.pool
        }
        let pool = make()
        entries[origin] = Entry(pool: pool, inUse: 1, lastUsed: now)
        return .use(pool, closing: closing)
    }

    /// A request to `origin` ended; the origin's idle time counts from now.
    mutating func checkIn(_ origin: PushServiceOrigin, at now: ContinuousClock.Instant) {
        guard var entry = entries[origin] else { return }
        entry.inUse = max(entry.inUse - 1, 0)
        entry.lastUsed = now
        entries[origin] = entry
    }

    /// The pools idle for `idleTimeout`, taken out: the caller closes them.
    mutating func takeIdle(at now: ContinuousClock.Instant) -> [Pool] {
        let idle = entries.filter { $0.value.inUse == 0 && now - $0.value.lastUsed >= idleTimeout }
        for origin in idle.keys { entries.removeValue(forKey: origin) }
        return idle.values.map(\.pool)
    }

    /// Every pool, taken out; no origin is opened after this.
    mutating func shutDown() -> [Pool] {
        isShutDown = true
        defer { entries.removeAll() }
        return entries.values.map(\.pool)
    }
}
