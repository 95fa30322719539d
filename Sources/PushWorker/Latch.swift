import Locking

/// A one-way signal many tasks can wait on: once opened, every wait returns
/// at once. The worker's stop request.
final class Latch: Sendable {
    /// One wait's progress. A timeout or a cancellation can come before the wait has
    /// stored its continuation (a timer of a few milliseconds on a loaded machine): it is
    /// kept as `released`, so the wait returns as soon as it gets there instead of
    /// sleeping until the latch opens.
    private enum Wait {
        case starting
        case waiting(CheckedContinuation<Void, Never>)
        case released
    }

    private struct State {
        var isOpen = false
        var waits: [Int: Wait] = [:]
        var nextWait = 0
    }

    private let state = Locked(State())

    var isOpen: Bool { state.withLock { $0.isOpen } }

    func open() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            var waiting: [CheckedContinuation<Void, Never>] = []
            for (id, wait) in state.waits {
                guard case .waiting(let continuation) = wait else { continue }
                waiting.append(continuation)
                state.waits[id] = nil
            }
            return waiting
        }
        waiting.forEach { $0.resume() }
    }

    /// Returns when the latch opens, `timeout` passes (nil: never), or the task is cancelled.
    func wait(timeout: Duration? = nil) async {
        await wait(timeout: timeout, beforeRegistering: {})
    }

    /// `beforeRegistering` runs after the timer has started and before the wait stores its
    /// continuation: a test holds the wait there so that the timer fires first.
    func wait(timeout: Duration?, beforeRegistering: () -> Void) async {
        let id = state.withLock { state in
            defer { state.nextWait += 1 }
            state.waits[state.nextWait] = .starting
            return state.nextWait
        }
        let alarm = timeout.map { timeout in TaskThread.shared.set(after: timeout) { [weak self] in self?.release(id) } }
        defer {
            if let alarm { TaskThread.shared.cancel(alarm) }
            state.withLock { $0.waits[id] = nil }
        }
        beforeRegistering()
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    guard !state.isOpen, !Task.isCancelled, case .starting = state.waits[id] else { return true }
                    state.waits[id] = .waiting(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            release(id)
        }
    }

    private func release(_ id: Int) {
        let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
            switch state.waits[id] {
            case .starting:
                state.waits[id] = .released
                return nil
            case .waiting(let continuation):
                state.waits[id] = nil
                return continuation
            case .released, nil:
                return nil
            }
        }
        waiting?.resume()
    }
}
