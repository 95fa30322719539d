import PGPushCore
import Testing

@Suite struct EnvironmentMismatchMonitorTests {
    @Test func mostlyBadDeviceTokenIsSuspectedThenCleared() {
        var monitor = EnvironmentMismatchMonitor(window: 20, minimumAnswers: 10, threshold: 0.5)
        var verdicts: [EnvironmentMismatchMonitor.Verdict] = []
        for _ in 0..<9 { verdicts.append(monitor.record(reason: "BadDeviceToken")) }
        #expect(verdicts.allSatisfy { $0 == .unchanged })   // too few answers to judge
        #expect(monitor.record(reason: "BadDeviceToken") == .suspected)
        #expect(monitor.isSuspected)
        #expect(monitor.record(reason: "BadDeviceToken") == .unchanged)
        var cleared = false
        for _ in 0..<20 where !cleared { cleared = monitor.record(reason: nil) == .cleared }
        #expect(cleared)
        #expect(!monitor.isSuspected)
    }

    @Test func scatteredBadTokensAreNotAMismatch() {
        var monitor = EnvironmentMismatchMonitor()
        for index in 0..<1000 {
            #expect(monitor.record(reason: index % 5 == 0 ? "BadDeviceToken" : (index % 7 == 0 ? "Unregistered" : nil)) == .unchanged)
        }
        #expect(!monitor.isSuspected)
    }
}
