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
        /// Counts waits: an alarm rings for its own wait only.
        var waiterID = 0
    }

    private let state = Locked(State())

    func ring() { wake(onlyDuring: nil) }

    /// Returns when rung (or already rung since the last wait), when `timeout`
    /// passes, or when the task is cancelled.
    func wait(timeout: Duration) async {
        let alreadyRung = state.withLock { state in
            defer { state.rung = false }
            return state.rung
        }
        if alreadyRung { return }
        let wait = state.withLock { state in
            state.waiterID += 1
            return state.waiterID
        }
        let alarm = TaskThread.shared.set(after: timeout) { [weak self] in self?.timeOut(wait) }
        defer { TaskThread.shared.cancel(alarm) }
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
        state.withLock { state in
            state.rung = false
            state.waiterID += 1  // this wait's alarm, if it fires now, finds another wait
        }
    }

    /// The alarm of wait `wait`: rings only while that wait is the current one, so a wait
    /// that a ring already ended leaves no ring behind for the next.
    private func timeOut(_ wait: Int) { wake(onlyDuring: wait) }

    /// Resumes the waiter, or keeps the ring for the next wait; with `wait`, only while that
    /// wait is the current one.
    private func wake(onlyDuring wait: Int?) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let wait, state.waiterID != wait { return nil }
            guard let waiter = state.waiter else {
                state.rung = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }
}
