/// Things waiting their turn, taken lane by lane (every urgent one before any normal one,
/// normal before bulk) and first come, first served within a lane. Each operation is O(1)
/// amortised: a lane is an array read from a moving head, compacted as it empties.
package struct LaneQueue<Element> {
    private var lanes: [Line] = Lane.allCases.map { _ in Line() }

    private struct Line {
        var items: [Element] = []
        var head = 0
        var count: Int { items.count - head }
    }

    package init() {}

    package var count: Int { lanes.reduce(0) { $0 + $1.count } }
    package var isEmpty: Bool { lanes.allSatisfy { $0.count == 0 } }

    package mutating func append(_ element: Element, lane: Lane) {
        lanes[lane.rank].items.append(element)
    }

    /// The first of the most urgent lane that has any.
    package mutating func popFirst() -> Element? {
        for rank in lanes.indices where lanes[rank].count > 0 {
            let element = lanes[rank].items[lanes[rank].head]
            lanes[rank].head += 1
            compact(rank)
            return element
        }
        return nil
    }

    /// Every element, in the order `popFirst` would give them; none is left.
    package mutating func removeAll() -> [Element] {
        var all: [Element] = []
        all.reserveCapacity(count)
        for rank in lanes.indices {
            all += lanes[rank].items[lanes[rank].head...]
            lanes[rank].items.removeAll(keepingCapacity: true)
            lanes[rank].head = 0
        }
        return all
    }

    private mutating func compact(_ rank: Int) {
        if lanes[rank].head == lanes[rank].items.count {
            lanes[rank].items.removeAll(keepingCapacity: true)
            lanes[rank].head = 0
        } else if lanes[rank].head > 1024 && lanes[rank].head * 2 > lanes[rank].items.count {
            lanes[rank].items.removeFirst(lanes[rank].head)
            lanes[rank].head = 0
        }
    }
}
