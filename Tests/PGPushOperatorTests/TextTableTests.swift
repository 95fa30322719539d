import PGPushOperator
import Testing

@Suite struct TextTableTests {
    @Test func numbersAlignRightTextLeft() {
        var table = TextTable(headers: ["app", "due"])
        table.append(["shop", "7"])
        table.append(["news", "1234"])
        #expect(table.rendered(indent: 0) == """
            app    due
            ----  ----
            shop     7
            news  1234
            """)
    }

    @Test func longCellsAreCutAndEmptyTablesSaySo() {
        var table = TextTable(headers: ["reason"])
        table.maximumCellWidth = 5
        table.append(["ServiceUnavailable"])
        #expect(table.rendered(indent: 0).hasSuffix("Serv…"))
        #expect(TextTable(headers: ["a"]).rendered() == "  (none)")
    }
}
