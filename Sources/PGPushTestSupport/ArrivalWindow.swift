import APNsSimulator

/// The most of `times` (sorted, in seconds) in any one-second window, wherever it starts.
package func busiestSecond(_ times: [Double]) -> Int {
    var busiest = 0
    var first = 0
    for (index, time) in times.enumerated() {
        while times[first] <= time - 1.0 { first += 1 }
        busiest = max(busiest, index - first + 1)
    }
    return busiest
}

extension SimulatorHarness {
    /// The most requests the simulator received in any one-second window, from the kernel's
    /// receive times in its request log (one clock for every connection).
    package static func mostInAnySecond(_ entries: [RequestLogEntry]) -> Int {
        busiestSecond(entries.compactMap(\.receivedMilliseconds).map { $0 / 1000 }.sorted())
    }

    /// Requests received per second from `from` (UNIX milliseconds) for `seconds`.
    package static func rate(_ entries: [RequestLogEntry], from start: Double, seconds: Double) -> Double {
        Double(entries.compactMap(\.receivedMilliseconds).filter { $0 >= start && $0 < start + seconds * 1000 }.count) / seconds
    }
}
