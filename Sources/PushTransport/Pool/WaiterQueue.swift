import PGPushCore

/// Requests waiting for the pool to change, by id: lane by lane (an urgent row's request
/// before any normal one's), in arrival order within a lane. A waiter that leaves early
/// (its deadline passed, its task was cancelled) is only forgotten, not searched for:
/// `takeNext` skips ids that no longer wait, so every operation is O(1) amortised.
package struct WaiterQueue {
    package typealias ID = Int

    private var waiting: Set<ID> = []
    private var order = LaneQueue<ID>()
    private var nextID: ID = 0

    package var count: Int { waiting.count }

    package func contains(_ id: ID) -> Bool { waiting.contains(id) }

    package mutating func makeID() -> ID {
        defer { nextID += 1 }
        return nextID
    }

    package mutating func append(_ id: ID, lane: Lane) {
        guard waiting.insert(id).inserted else { return }
        order.append(id, lane: lane)
    }

    /// False when `id` was not waiting (already woken or gone).
    package mutating func remove(_ id: ID) -> Bool {
        waiting.remove(id) != nil
    }

    /// The waiter whose turn it is (the most urgent lane's longest waiting), no longer waiting.
    package mutating func takeNext() -> ID? {
        while let id = order.popFirst() {
            if waiting.remove(id) != nil { return id }
        }
        return nil
    }

    /// Every waiting id, in turn order; none waits afterwards.
    package mutating func takeAll() -> [ID] {
        let ids = order.removeAll().filter { waiting.contains($0) }
        waiting.removeAll()
        return ids
    }
}
