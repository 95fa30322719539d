import Foundation

/// How many of the demo's rows are in each status right now.
package struct DemoProgress: Sendable, Equatable {
    package var total = 0
    package var counts: [String: Int] = [:]

    package init(total: Int, counts: [String: Int] = [:]) {
        self.total = total
        self.counts = counts
    }

    package func count(_ status: String) -> Int { counts[status] ?? 0 }

    /// Every row is in a final status (nothing stays queued or sending).
    package var isFinished: Bool { total > 0 && count("queued") == 0 && count("sending") == 0 }

    /// `  1.6s  queued 12  sending 30  delivered 180  failed 1  expired 1   (222/233 finished)`
    package func line(elapsedSeconds: Double) -> String {
        let finished = total - count("queued") - count("sending")
        let parts = ["queued", "sending", "delivered", "failed", "expired"].map { "\($0) \(count($0))" }
        let time = String(format: elapsedSeconds < 10 ? "%5.1fs" : "%5.0fs", elapsedSeconds)
        return "\(time)  " + parts.joined(separator: "  ") + "   (\(finished)/\(total) finished)"
    }
}
