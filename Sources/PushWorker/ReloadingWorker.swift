import PushTransport
import Synchronization

/// `pgpush run` across reloads. On `reload()` (SIGHUP) the configuration and every key and
/// certificate file are read again. When they load, the worker in force drains as at a stop
/// (requests in flight finish on their connections; rows claimed and not yet sent go back
/// to the queue unsent, uncounted) and a worker made from the new configuration takes over in
/// the same process, its connections opened with the new credentials; the log says what
/// changed, app by app. When they do not load, the log names the setting to fix and the
/// worker in force goes on as it was.
package final class ReloadingWorker: Sendable {
    package struct Loaded: Sendable {
        package let configuration: WorkerConfiguration
        package let senders: [any NotificationSender]

        package init(configuration: WorkerConfiguration, senders: [any NotificationSender]) {
            self.configuration = configuration
            self.senders = senders
        }
    }

    private struct State {
        var worker: Worker?
        var stopping = false
        var reloadsAsked = 0
        var workerEnded = false
    }

    /// Reads everything again; throws (naming the setting) when it does not load.
    private let load: @Sendable () throws -> Loaded
    private let log: Log
    private let state = Mutex(State())
    private let events = Doorbell()

    package init(log: Log, load: @escaping @Sendable () throws -> Loaded) {
        self.log = log
        self.load = load
    }

    /// The worker in force (nil before the first starts).
    package var worker: Worker? { state.withLock { $0.worker } }

    /// Asks for a reload; safe from any thread (a signal handler's queue).
    package func reload() {
        state.withLock { $0.reloadsAsked += 1 }
        events.ring()
    }

    /// Asks the worker in force to drain and `run` to return; safe from any thread.
    package func stop() {
        let worker = state.withLock { state in
            state.stopping = true
            return state.worker
        }
        worker?.stop()
        events.ring()
    }

    /// Runs `first`, then each configuration a reload loads, until `stop()`.
    package func run(first: Loaded) async throws {
        var current = first
        var facts = CredentialFacts.of(current.configuration.apps, senders: current.senders)
        while true {
            let worker = try await makeWorker(current)
            let stopping = state.withLock { state in
                state.worker = worker
                state.workerEnded = false
                return state.stopping
            }
            if stopping { worker.stop() }
            let running = Task { [self] in
                defer {
                    state.withLock { $0.workerEnded = true }
                    events.ring()
                }
                try await worker.run()
            }
            let next = await nextConfiguration(after: current, facts: &facts)
            worker.stop()
            try await running.value
            guard let next else { return }
            current = next
        }
    }

    /// Waits for a reload that loads (returned) or for the end (nil): a stop, or the worker
    /// ending by itself.
    private func nextConfiguration(after current: Loaded, facts: inout [CredentialFacts]) async -> Loaded? {
        while true {
            await events.wait(timeout: .seconds(3600))
            let (stopping, ended, asked) = state.withLock { state in
                defer { state.reloadsAsked = 0 }
                return (state.stopping, state.workerEnded, state.reloadsAsked)
            }
            if stopping || ended { return nil }
            guard asked > 0 else { continue }
            let loaded: Loaded
            do {
                loaded = try load()
            } catch {
                log.error("reload_refused", ["error": error, "why": "the configuration in force stays; fix the setting named, then send SIGHUP again"])
                continue
            }
            let newFacts = CredentialFacts.of(loaded.configuration.apps, senders: loaded.senders)
            let changes = ConfigurationChanges.between(current.configuration.apps, facts, and: loaded.configuration.apps, newFacts)
            log.info("reload", ["apps": loaded.configuration.apps.map(\.name).joined(separator: ","), "changes": changes.count,
                                "why": "requests in flight finish; new connections use what was read now"])
            for change in changes { log.info("reload_change", change.fields) }
            facts = newFacts
            return loaded
        }
    }

    /// A worker for `loaded`; its metrics address may still be held for a moment by the worker
    /// before it, so a refusal to bind is tried again for a few seconds.
    private func makeWorker(_ loaded: Loaded) async throws -> Worker {
        var attempts = 0
        while true {
            do {
                return try Worker(configuration: loaded.configuration, senders: loaded.senders, log: log)
            } catch {
                attempts += 1
                guard attempts < 25, state.withLock({ $0.worker }) != nil else { throw error }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }
}
