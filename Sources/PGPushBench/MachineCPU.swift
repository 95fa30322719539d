import Foundation

/// Whole-machine CPU time from /proc/stat, to tell "the worker is slow" from "the
/// machine is full" (the simulator, PostgreSQL and anything else share the cores).
struct MachineCPU {
    var busyTicks: UInt64
    var totalTicks: UInt64

    static func now() -> MachineCPU {
        let text = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8)) ?? ""
        let fields = text.split(separator: "\n").first?.split(separator: " ").dropFirst().compactMap { UInt64($0) } ?? []
        let total = fields.prefix(8).reduce(0, +)
        // idle and iowait are fields 4 and 5.
        let idle = (fields.count > 4 ? fields[3] + fields[4] : 0)
        return MachineCPU(busyTicks: total - idle, totalTicks: total)
    }

    /// Busy CPUs on average since `start` (2.0 = both cores of a 2-core machine).
    func busyCPUs(since start: MachineCPU) -> Double {
        let total = totalTicks &- start.totalTicks
        guard total > 0 else { return 0 }
        return Double(busyTicks &- start.busyTicks) / Double(total) * Double(ProcessInfo.processInfo.activeProcessorCount)
    }
}

/// CPU time of this process so far (the transport ceiling's client runs in it).
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let seconds = { (time: timeval) in Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
