import Foundation

/// The last hour as a small inline SVG: one column per minute, delivered stacked on failed,
/// the oldest minute on the left. Built from numbers only; the label is escaped.
package enum ThroughputChart {
    static let width = 180, height = 32

    /// `delivered[0]` and `failed[0]` are the latest minute.
    package static func svg(delivered: [Int], failed: [Int], label: String) -> HTML {
        let minutes = min(delivered.count, failed.count)
        let peak = max(1, (0..<minutes).map { delivered[$0] + failed[$0] }.max() ?? 1)
        let column = Double(width) / Double(max(minutes, 1))
        var bars = ""
        for minute in 0..<minutes {
            let x = Double(width) - Double(minute + 1) * column
            let failedHeight = Double(height) * Double(failed[minute]) / Double(peak)
            let deliveredHeight = Double(height) * Double(delivered[minute]) / Double(peak)
            if failed[minute] > 0 {
                bars += rect(x: x, y: Double(height) - failedHeight, width: column, height: failedHeight, kind: "bad")
            }
            if delivered[minute] > 0 {
                bars += rect(x: x, y: Double(height) - failedHeight - deliveredHeight, width: column, height: deliveredHeight, kind: "ok")
            }
        }
        let total = delivered.reduce(0, +), failures = failed.reduce(0, +)
        let title = HTML(text: "\(label): \(HTML.grouped(total)) delivered, \(HTML.grouped(failures)) failed in the last hour; peak \(HTML.grouped(peak))/min")
        return HTML.drawn("<svg class=\"chart\" width=\"\(width)\" height=\"\(height)\" viewBox=\"0 0 \(width) \(height)\" role=\"img\">")
            + HTML.drawn("<title>") + title + HTML.drawn("</title>") + HTML.drawn(bars + "</svg>")
    }

    private static func rect(x: Double, y: Double, width: Double, height: Double, kind: String) -> String {
        func f(_ value: Double) -> String { String(format: "%.1f", value) }
        return "<rect class=\"\(kind)\" x=\"\(f(x))\" y=\"\(f(y))\" width=\"\(f(max(width - 0.5, 0.5)))\" height=\"\(f(max(height, 0.5)))\"/>"
    }
}
