import APNsClient
import APNsCore
import Dispatch
import Foundation
import Locking
import PGPushCore
import PushWorker

/// HTTP/2 alone: the worker's APNs client, uncapped, sending prepared requests
/// to the simulator process with as many in flight as the uncapped worker keeps.
package enum TransportCeiling {
    package static let inFlight = 2000

    package static func run(simulator: SimulatorProcess, credentials: BenchCredentials, requests: Int, connections: Int,
                           payloadBytes: Int, progress: @escaping @Sendable (Int) -> Void) throws -> (seconds: Double, delivered: Int, clientCPUSeconds: Double, machineBusyCPUs: Double) {
        let app = AppConfiguration(name: "default", bundleID: BenchCredentials.bundleID, apnsURL: simulator.baseURL,
                                   caFile: simulator.caFile,
                                   authentication: .token(teamID: BenchCredentials.teamID, keyID: BenchCredentials.keyID,
                                                          keyFile: credentials.keyFile),
                                   connections: connections, ratePerConnection: 0)
        let client = try SenderFactory.makeClient(for: app)
        let payload = Array(BenchRows.payload(bytes: payloadBytes).utf8)
        let prepared = try (0..<requests).map { index in
            try PushNotification(id: Int64(index), deviceToken: BenchRows.token(index + 1), payload: payload)
                .validated(bundleID: BenchCredentials.bundleID, authentication: .token)
        }
        let warmUp = try (0..<100).map { index in
            try PushNotification(id: Int64(index), deviceToken: BenchRows.token(90_000_000 + index), payload: payload)
                .validated(bundleID: BenchCredentials.bundleID, authentication: .token)
        }
        let outcome = Locked<Result<(Double, Int, Double, Double), any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            await client.start()
            _ = await send(warmUp, through: client, progress: { _ in })
            let started = ContinuousClock.now
            let cpuAtStart = ownCPUSeconds(), machineAtStart = MachineCPU.now()
            let delivered = await send(prepared, through: client, progress: progress)
            let seconds = Double((ContinuousClock.now - started) / .microseconds(1)) / 1e6
            let cpu = ownCPUSeconds() - cpuAtStart, busy = MachineCPU.now().busyCPUs(since: machineAtStart)
            await client.shutdown()
            outcome.withLock { $0 = .success((seconds, delivered, cpu, busy)) }
            done.signal()
        }
        done.wait()
        guard let result = outcome.withLock({ $0 }) else { throw BenchError("transport ceiling: no result") }
        return try result.get()
    }

    /// Sends everything with at most `inFlight` requests outstanding; returns how many were answered 200.
    private static func send(_ requests: [APNsRequest], through client: APNsClient,
                             progress: @escaping @Sendable (Int) -> Void) async -> Int {
        await withTaskGroup(of: Bool.self) { group in
            var next = 0, finished = 0, delivered = 0
            while next < min(inFlight, requests.count) {
                let request = requests[next]
                group.addTask { await client.send(request).verdict == .delivered }
                next += 1
            }
            while let wasDelivered = await group.next() {
                finished += 1
                if wasDelivered { delivered += 1 }
                if finished % 10_000 == 0 { progress(finished) }
                if next < requests.count {
                    let request = requests[next]
                    group.addTask { await client.send(request).verdict == .delivered }
                    next += 1
                }
            }
            return delivered
        }
    }
}
