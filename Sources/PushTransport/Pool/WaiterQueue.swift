/// Requests waiting for the pool to change, by id, in arrival order. A waiter that leaves
/// early (its deadline passed, its task was cancelled) is only forgotten, not searched
/// for: `takeLongest` skips ids that no longer wait, so every operation is O(1) amortised.
package struct WaiterQueue {
    package typealias ID = Int

    private var waiting: Set<ID> = []
    private var order: [ID] = []
    private var head = 0
    private var nextID: ID = 0

    package var count: Int { waiting.count }

    package func contains(_ id: ID) -> Bool { waiting.contains(id) }

    package mutating func makeID() -> ID {
        defer { nextID += 1 }
        return nextID
    }

    package mutating func append(_ id: ID) {
        guard waiting.insert(id).inserted else { return }
        order.append(id)
    }

    /// False when `id` was not waiting (already woken or gone).
    package mutating func remove(_ id: ID) -> Bool {
        waiting.remove(id) != nil
    }

    /// The longest waiting id, no longer waiting.
    package mutating func takeLongest() -> ID? {
        defer { compact() }
        while head < order.count {
            let id = order[head]
            head += 1
            if waiting.remove(id) != nil { return id }
        }
        return nil
    }

    /// Every waiting id, oldest first; none waits afterwards.
    package mutating func takeAll() -> [ID] {
        let ids = order[head...].filter { waiting.contains($0) }
        waiting.removeAll()
        order.removeAll(keepingCapacity: true)
        head = 0
        return ids
    }

    private mutating func compact() {
        if head == order.count {
            order.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
