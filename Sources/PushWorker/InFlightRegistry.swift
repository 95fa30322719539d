import Locking
import PushQueue

/// The rows this worker holds under lease and has not written an outcome for.
/// Lease renewal reads it; the claim loops size their next claim from the
/// per-route counts, kept alongside so that reading one is O(1).
final class InFlightRegistry: Sendable {
    private struct State {
        var routes: [Int64: Route] = [:]
        var counts: [Route: Int] = [:]
    }

    private let state = Locked(State())

    func add(_ claimed: [ClaimedNotification], route: Route) {
        state.withLock { state in
            for row in claimed { state.routes[row.id] = route }
            state.counts[route, default: 0] += claimed.count
        }
    }

    /// Returns how many rows of the same route are still in flight.
    @discardableResult
    func remove(_ id: Int64) -> Int {
        state.withLock { state in
            guard let route = state.routes.removeValue(forKey: id) else { return 0 }
            state.counts[route, default: 1] -= 1
            return state.counts[route] ?? 0
        }
    }

    func count(_ route: Route) -> Int {
        state.withLock { $0.counts[route] ?? 0 }
    }

    var ids: [Int64] { state.withLock { Array($0.routes.keys) } }
    var isEmpty: Bool { state.withLock { $0.routes.isEmpty } }
}
