import Locking
import PushWorker
import Testing

/// A log line shows any value from the network as one bounded, quoted field: no byte of an
/// answer can end the line, start another, or reach a terminal as a control.
@Suite struct LogLineTests {
    static func line(_ value: String) -> String {
        let lines = Locked<[String]>([])
        Log(sink: { line in lines.withLock { $0.append(line) } }).warning("answer", ["reason": value])
        return lines.withLock { $0.joined() }
    }

    @Test func everyHiddenCharacterIsEscaped() {
        let line = Self.line("a\u{85}b\u{2028}c\u{2029}d\u{1B}[2Je\u{9B}f\nforged=1")
        #expect(line.hasSuffix(#" reason="a\u0085b\u2028c\u2029d\u001b[2Je\u009bf\nforged=1""# + "\n"))
        #expect(line.filter { $0 == "\n" }.count == 1)
        #expect(!line.unicodeScalars.dropLast().contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
    }

    @Test func aValueIsCutAtTheBoundWithItsSize() {
        let line = Self.line(String(repeating: "é", count: 2_500_000))
        #expect(line.utf8.count < Log.maxValueBytes + 200)
        #expect(line.contains("…(5000000 bytes)"))
        #expect(!line.contains("\u{FFFD}"))
    }
}
