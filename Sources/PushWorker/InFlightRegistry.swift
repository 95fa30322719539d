import PushQueue
import Synchronization

/// The rows this worker holds under lease and has not written an outcome for.
/// Lease renewal reads it; the claim loops size their next claim from it.
final class InFlightRegistry: Sendable {
    private let rows = Mutex<[Int64: String]>([:])

    func add(_ claimed: [ClaimedNotification], app: String) {
        rows.withLock { rows in
            for row in claimed { rows[row.id] = app }
        }
    }

    func remove(_ id: Int64) {
        _ = rows.withLock { $0.removeValue(forKey: id) }
    }

    func count(app: String) -> Int {
        rows.withLock { rows in rows.values.reduce(0) { $0 + ($1 == app ? 1 : 0) } }
    }

    var ids: [Int64] { rows.withLock { Array($0.keys) } }
    var isEmpty: Bool { rows.withLock { $0.isEmpty } }
}
