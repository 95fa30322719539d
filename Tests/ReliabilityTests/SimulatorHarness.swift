import APNsSimulator
import PGPushTestSupport

extension SimulatorHarness {
    /// The simulator as the fault suite drives it: its CA and server certificate on disk
    /// and its port fixed, so a worker can trust it and even start before it is up, and a
    /// request log from which the suite reads every accepted `apns-id`.
    static func reliability(faults: FaultPlan) throws -> SimulatorHarness {
        try SimulatorHarness(bundleID: "com.example.reliability", faults: faults, logRequests: true, startsLater: true)
    }
}
