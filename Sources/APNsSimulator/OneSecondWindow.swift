/// Counts arrivals in a sliding one-second window and remembers the largest count,
/// so a report can say "at most N requests in any one second".
package struct OneSecondWindow: Sendable {
    private static let window: UInt64 = 1_000_000_000
    /// Arrival times in nanoseconds (the kernel's receive time where the socket gives one,
    /// else a monotonic clock; one clock per connection) within the last second; a ring used as a queue.
    private var arrivals: [UInt64] = []
    private var head = 0
    package private(set) var maximum = 0

    package init() {}

    package mutating func record(atNanoseconds now: UInt64) {
        while head < arrivals.count, arrivals[head] &+ Self.window <= now { head += 1 }
        if head > 4096, head * 2 > arrivals.count {
            arrivals.removeFirst(head)
            head = 0
        }
        arrivals.append(now)
        maximum = max(maximum, arrivals.count - head)
    }
}
