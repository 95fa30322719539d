import APNsSimulator

extension SimulatorHarness {
    /// The most requests the simulator received in any one-second window, from the kernel's
    /// receive times in its request log (one clock for every connection).
    package static func mostInAnySecond(_ entries: [RequestLogEntry]) -> Int {
        let times = entries.compactMap(\.receivedMilliseconds).sorted()
        var most = 0
        var first = 0
        for (index, time) in times.enumerated() {
            while times[first] + 1000 <= time { first += 1 }
            most = max(most, index - first + 1)
        }
        return most
    }

    /// Requests received per second from `from` (UNIX milliseconds) for `seconds`.
    package static func rate(_ entries: [RequestLogEntry], from start: Double, seconds: Double) -> Double {
        Double(entries.compactMap(\.receivedMilliseconds).filter { $0 >= start && $0 < start + seconds * 1000 }.count) / seconds
    }
}
