import Locking
import PushQueue

/// The rows this worker holds under lease and has not written an outcome for.
/// Lease renewal reads it; the claim loops size their next claim from the
/// per-app counts, kept alongside so that reading one is O(1).
final class InFlightRegistry: Sendable {
    private struct State {
        var apps: [Int64: String] = [:]
        var counts: [String: Int] = [:]
    }

    private let state = Locked(State())

    func add(_ claimed: [ClaimedNotification], app: String) {
        state.withLock { state in
            for row in claimed { state.apps[row.id] = app }
            state.counts[app, default: 0] += claimed.count
        }
    }

    /// Returns how many rows of the same app are still in flight.
    @discardableResult
    func remove(_ id: Int64) -> Int {
        state.withLock { state in
            guard let app = state.apps.removeValue(forKey: id) else { return 0 }
            state.counts[app, default: 1] -= 1
            return state.counts[app] ?? 0
        }
    }

    func count(app: String) -> Int {
        state.withLock { $0.counts[app] ?? 0 }
    }

    var ids: [Int64] { state.withLock { Array($0.apps.keys) } }
    var isEmpty: Bool { state.withLock { $0.apps.isEmpty } }
}
