import PGPushCore
import Testing

@Suite struct WrongSetupMonitorTests {
    @Test func mostlyBadDeviceTokenIsSuspectedThenCleared() {
        var monitor = WrongSetupMonitor(window: 20, minimumAnswers: 10, threshold: 0.5)
        var verdicts: [WrongSetupMonitor.Change] = []
        for _ in 0..<9 { verdicts.append(monitor.record(hintsWrongSetup: true)) }
        #expect(verdicts.allSatisfy { $0 == .unchanged })   // too few answers to judge
        #expect(monitor.record(hintsWrongSetup: true) == .suspected)
        #expect(monitor.isSuspected)
        #expect(monitor.record(hintsWrongSetup: true) == .unchanged)
        var cleared = false
        for _ in 0..<20 where !cleared { cleared = monitor.record(hintsWrongSetup: false) == .cleared }
        #expect(cleared)
        #expect(!monitor.isSuspected)
    }

    @Test func scatteredBadTokensAreNotAMismatch() {
        var monitor = WrongSetupMonitor()
        for index in 0..<1000 {
            #expect(monitor.record(hintsWrongSetup: index % 5 == 0) == .unchanged)
        }
        #expect(!monitor.isSuspected)
    }
}
