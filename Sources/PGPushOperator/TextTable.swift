/// A small fixed-width text table for terminals: a header, a rule, one line per row.
///
/// Columns holding numbers are right-aligned so digits line up; everything else is
/// left-aligned. Cells longer than `maximumCellWidth` are cut with an ellipsis so one
/// long reason cannot push the table off the screen; control characters are shown as
/// escapes (`TerminalText`), never sent to the terminal.
package struct TextTable: Sendable {
    package var headers: [String]
    package var rows: [[String]]
    package var maximumCellWidth = 48

    package init(headers: [String], rows: [[String]] = []) {
        self.headers = headers
        self.rows = rows
    }

    package mutating func append(_ row: [String]) { rows.append(row) }

    /// The table, indented by `indent` spaces; a "(none)" line when it has no rows.
    package func rendered(indent: Int = 2) -> String {
        let margin = String(repeating: " ", count: indent)
        let cells = rows.map { row in headers.indices.map { index in clip(index < row.count ? row[index] : "") } }
        guard !cells.isEmpty else { return margin + "(none)" }
        let widths = headers.indices.map { column in
            max(headers[column].count, cells.map { $0[column].count }.max() ?? 0)
        }
        let numeric = headers.indices.map { column in cells.allSatisfy { Self.looksNumeric($0[column]) } }
        func line(_ values: [String]) -> String {
            let padded = values.enumerated().map { column, value in
                let fill = String(repeating: " ", count: widths[column] - value.count)
                return numeric[column] ? fill + value : value + fill
            }
            return margin + padded.joined(separator: "  ").replacingTrailingBlanks()
        }
        let rule = margin + widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")
        return ([line(headers.map(clip)), rule] + cells.map(line)).joined(separator: "\n")
    }

    private func clip(_ raw: String) -> String {
        let value = TerminalText.escaped(raw)
        return value.count <= maximumCellWidth ? value : String(value.prefix(maximumCellWidth - 1)) + "…"
    }

    private static func looksNumeric(_ value: String) -> Bool {
        !value.isEmpty && value.allSatisfy { $0.isNumber || $0 == "." || $0 == "-" || $0 == "%" || $0 == "s" }
            && value.first.map { $0.isNumber || $0 == "-" } == true
    }
}

extension String {
    fileprivate func replacingTrailingBlanks() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
