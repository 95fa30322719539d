import Locking

/// Wakes one waiting task: NOTIFY arrived, a request finished, shutdown began.
///
/// One waiter at a time (each claim loop has its own doorbell). A ring with
/// nobody waiting is remembered, so a ring between "checked for
/// work" and "started waiting" is never lost.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Void, Never>?
        var waiterID = 0
    }

    private let state = Locked(State())

    func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.rung = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns when rung (or already rung since the last wait), when `timeout`
    /// passes, or when the task is cancelled.
    func wait(timeout: Duration) async {
        let alreadyRung = state.withLock { state in
            defer { state.rung = false }
            return state.rung
        }
        if alreadyRung { return }
        let timer = Task { [weak self] in
            // A cancelled timer (the wait ended by a ring) must not ring: the ring would be
            // remembered and end the next wait at once.
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.ring()
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.rung || Task.isCancelled {
                        state.rung = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            ring()
        }
        state.withLock { $0.rung = false }
    }
}
