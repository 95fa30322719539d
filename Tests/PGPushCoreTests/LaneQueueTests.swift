@testable import PGPushCore
import Testing

/// The order sends wait in once claimed: lane by lane, first come first served within one.
@Suite struct LaneQueueTests {
    @Test func urgentBeforeNormalBeforeBulkThenArrivalOrder() {
        var queue = LaneQueue<String>()
        queue.append("bulk 1", lane: .bulk)
        queue.append("normal 1", lane: .normal)
        queue.append("bulk 2", lane: .bulk)
        queue.append("urgent 1", lane: .urgent)
        queue.append("normal 2", lane: .normal)
        #expect(queue.count == 5)
        #expect(queue.popFirst() == "urgent 1")
        // One arriving meanwhile still goes before the lanes below it.
        queue.append("urgent 2", lane: .urgent)
        var order: [String] = []
        while let next = queue.popFirst() { order.append(next) }
        #expect(order == ["urgent 2", "normal 1", "normal 2", "bulk 1", "bulk 2"])
        #expect(queue.isEmpty && queue.popFirst() == nil)
    }

    @Test func removeAllGivesTurnOrderAndEmpties() {
        var queue = LaneQueue<Int>()
        for index in 0..<3000 { queue.append(index, lane: index % 3 == 0 ? .bulk : .normal) }
        // Past the compaction threshold: what is left keeps its order.
        for _ in 0..<1500 { _ = queue.popFirst() }
        queue.append(-1, lane: .urgent)
        let rest = queue.removeAll()
        #expect(rest.first == -1)
        #expect(rest.count == 1501)
        let normal = (0..<3000).filter { $0 % 3 != 0 }, bulk = (0..<3000).filter { $0 % 3 == 0 }
        #expect(Array(rest.dropFirst()) == Array(normal.dropFirst(1500)) + bulk)
        #expect(queue.isEmpty)
    }

    @Test func lanesSortAsTheClaimTakesThem() {
        #expect(Lane.allCases.sorted() == [.urgent, .normal, .bulk])
        #expect(Lane(rawValue: "urgent") == .urgent && Lane(rawValue: "express") == nil)
    }
}
