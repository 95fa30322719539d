import CLibPQ
import Foundation

/// The rows of one statement. Owns its `PGresult`, which is cleared in `deinit`.
///
/// Values are read in text format; the accessors return nil for SQL NULL and
/// for text that does not parse as the asked type.
package final class PostgresResult {
    private let handle: OpaquePointer
    package let rowCount: Int
    package let columnCount: Int

    init(owning handle: OpaquePointer) {
        self.handle = handle
        rowCount = Int(PQntuples(handle))
        columnCount = Int(PQnfields(handle))
    }

    deinit { PQclear(handle) }

    /// Rows changed by an INSERT/UPDATE/DELETE without RETURNING.
    package var affectedRows: Int {
        guard let text = PQcmdTuples(handle) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    /// The name of column `index` (nil when out of range).
    package func columnName(_ index: Int) -> String? {
        guard index >= 0, index < columnCount, let name = PQfname(handle, Int32(index)) else { return nil }
        return String(cString: name)
    }

    package func columnIndex(_ name: String) -> Int? {
        let index = PQfnumber(handle, name)
        return index < 0 ? nil : Int(index)
    }

    package func isNull(_ row: Int, _ column: Int) -> Bool {
        guard inBounds(row, column) else { return true }
        return PQgetisnull(handle, Int32(row), Int32(column)) == 1
    }

    package func string(_ row: Int, _ column: Int) -> String? {
        guard !isNull(row, column), let value = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        return String(cString: value)
    }

    /// The raw bytes of a text-format value, without building a String (hot paths: payloads).
    package func bytes(_ row: Int, _ column: Int) -> [UInt8]? {
        guard !isNull(row, column), let value = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return value.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }

    /// Calls `body` with a text-format value's bytes where libpq keeps them (valid only
    /// inside it): for values parsed at once, without an array made per row.
    package func withBytes<T>(_ row: Int, _ column: Int, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T? {
        guard !isNull(row, column), let value = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return value.withMemoryRebound(to: UInt8.self, capacity: length) { body(UnsafeBufferPointer(start: $0, count: length)) }
    }

    package func int64(_ row: Int, _ column: Int) -> Int64? {
        guard !isNull(row, column), let value = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        return Self.parseInt64(value)
    }

    package func int(_ row: Int, _ column: Int) -> Int? { int64(row, column).map { Int($0) } }

    package func double(_ row: Int, _ column: Int) -> Double? { string(row, column).flatMap(Double.init) }

    package func bool(_ row: Int, _ column: Int) -> Bool? {
        switch string(row, column) {
        case "t": return true
        case "f": return false
        default: return nil
        }
    }

    package func uuid(_ row: Int, _ column: Int) -> UUID? { string(row, column).flatMap(UUID.init(uuidString:)) }

    private func inBounds(_ row: Int, _ column: Int) -> Bool {
        row >= 0 && row < rowCount && column >= 0 && column < columnCount
    }

    /// Parses a decimal integer straight from the C string (ids and counters are read per row).
    private static func parseInt64(_ text: UnsafePointer<CChar>) -> Int64? {
        var pointer = text
        var negative = false
        if pointer.pointee == CChar(UInt8(ascii: "-")) { negative = true; pointer += 1 }
        var value: Int64 = 0
        var digits = 0
        while pointer.pointee != 0 {
            let digit = Int64(pointer.pointee) - 48
            guard digit >= 0 && digit <= 9 else { return nil }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(digit)
            guard !overflow1 && !overflow2 else { return nil }
            value = sum
            digits += 1
            pointer += 1
        }
        guard digits > 0 else { return nil }
        return negative ? -value : value
    }
}
